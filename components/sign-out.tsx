'use client';
import { signOut } from 'next-auth/react';
import { withBasePath } from './base-path.ts';

export function SignOut() {
  return <button onClick={() => void signOut({ callbackUrl: withBasePath('/login') })}>Sign out</button>;
}

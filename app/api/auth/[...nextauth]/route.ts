import NextAuth from 'next-auth';
import { authOptions } from '../../../../lib/auth.ts';

// Options are built per request so that a missing secret is reported, not baked in at build.
function handler(request: Request, context: { params: Promise<{ nextauth: string[] }> }) {
  return NextAuth(request as never, context as never, authOptions());
}

export { handler as GET, handler as POST };

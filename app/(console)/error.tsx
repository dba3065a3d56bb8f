'use client';

/** A page that failed on the server (a database timeout, an outage) says so in a sentence. */
export default function ConsoleError({ reset }: { error: Error; reset: () => void }) {
  return (
    <div className="error" role="alert">
      <p>This page could not be loaded: the database did not answer in time or is unavailable. Nothing was changed.</p>
      <button onClick={() => reset()}>Try again</button>
    </div>
  );
}

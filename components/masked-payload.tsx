import type { ReactNode } from 'react';

/**
 * A payload as redaction left it (the job page's and a schedule's): the sentence when it is
 * hidden whole, the masked fields, the JSON; `children` after it (the job page's reveal button).
 */
export function MaskedPayload(props: {
  payload: unknown;
  redactedPaths: readonly string[];
  payloadHidden: string | null;
  testId: string;
  children?: ReactNode;
}) {
  const { payload, redactedPaths, payloadHidden } = props;
  return (
    <>
      <h2>Payload</h2>
      {payloadHidden && (
        <p className="muted" data-testid="payload-hidden">
          {payloadHidden}
        </p>
      )}
      {redactedPaths.length > 0 && <p className="muted">Masked fields: {redactedPaths.join(', ')}.</p>}
      <pre data-testid={props.testId} tabIndex={0}>
        {JSON.stringify(payload, null, 2)}
      </pre>
      {props.children}
    </>
  );
}

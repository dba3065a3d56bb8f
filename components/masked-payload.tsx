import type { ReactNode } from 'react';

/**
 * A payload as redaction left it (the job page's and a schedule's), or a job's result masked the
 * same way: the sentence when it is hidden whole, the masked fields, the JSON; `children` after
 * it (the job page's reveal button). `title` names the section (default "Payload").
 */
export function MaskedPayload(props: {
  payload: unknown;
  redactedPaths: readonly string[];
  payloadHidden: string | null;
  testId: string;
  title?: string;
  /** The test id of the hidden-whole sentence (default `payload-hidden`). */
  hiddenTestId?: string;
  children?: ReactNode;
}) {
  const { payload, redactedPaths, payloadHidden, title = 'Payload', hiddenTestId = 'payload-hidden' } = props;
  return (
    <>
      <h2>{title}</h2>
      {payloadHidden && (
        <p className="muted" data-testid={hiddenTestId}>
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

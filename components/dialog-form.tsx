'use client';
/**
 * The parts every audited change's form shares (limits, groups, schedules): the optional reason
 * for the audit log, and the end of a dialog's form (the refusal said in the dialog, which stays
 * open; the button that changes it; the one that leaves it as it is).
 */
import type { RefObject } from 'react';

/** The reason for the audit log, optional. */
export function ReasonField({
  value,
  onChange,
  inputRef,
}: {
  value: string;
  onChange: (value: string) => void;
  inputRef?: RefObject<HTMLInputElement | null>;
}) {
  return (
    <label>
      Reason (optional, for the audit log)
      <input
        ref={inputRef}
        name="reason"
        autoComplete="off"
        value={value}
        onChange={(event) => onChange(event.target.value)}
      />
    </label>
  );
}

/** A dialog form's end: its refusal (`error`, test id `errorTestId`), its submit and cancel buttons. */
export function DialogFormEnd(props: {
  error: string | null;
  errorTestId: string;
  busy: boolean;
  submitLabel: string;
  danger: boolean;
  onCancel: () => void;
}) {
  return (
    <>
      {props.error && (
        <p className="error" role="alert" data-testid={props.errorTestId}>
          {props.error}
        </p>
      )}
      <button type="submit" className={props.danger ? 'danger' : undefined} disabled={props.busy}>
        {props.submitLabel}
      </button>
      <button type="button" onClick={props.onCancel}>
        Keep it as it is
      </button>
    </>
  );
}

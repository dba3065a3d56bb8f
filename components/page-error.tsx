export function PageError({ message }: { message: string }) {
  return (
    <p className="error" role="alert" data-testid="page-error">
      {message}
    </p>
  );
}

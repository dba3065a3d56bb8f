/**
 * A job's tags as small labels, in the order the job was given them; nothing for none. The text
 * is rendered as text (React escapes it), whatever a producer put in a tag.
 */
export function JobTags({ tags }: { tags: readonly string[] }) {
  if (tags.length === 0) return null;
  return (
    <ul className="tags" aria-label="tags" data-testid="job-tags">
      {tags.map((tag, i) => (
        // Scrubbing can make two tags alike (both `••••••`): the position keeps keys apart.
        <li key={`${i}:${tag}`} className="tag">
          {tag}
        </li>
      ))}
    </ul>
  );
}

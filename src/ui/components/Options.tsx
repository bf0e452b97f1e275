/** The options of a select whose values are also their labels. */
export function Options(props: { values: readonly (string | number)[] }) {
  return (
    <>
      {props.values.map((v) => (
        <option key={v} value={v}>
          {v}
        </option>
      ))}
    </>
  );
}

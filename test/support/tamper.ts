// Tampering with a sealed or signed value in tests. The character changed is the second to last:
// the last character of unpadded base64url may carry only padding bits (a change there can decode
// to the same bytes), and the replacement always differs from what stood there, so the decoded
// bytes are certain to change.
export function alterOneCharacter(value: string): string {
  const i = value.length - 2;
  return value.slice(0, i) + (value[i] === "A" ? "B" : "A") + value.slice(i + 1);
}

// Byte-level reads of a weight buffer declared as `uint w[]` (std430). GGUF blocks are packed
// with 2-byte alignment at best (Q8_0 is 34 bytes), so every field is read through these; they
// need no 8- or 16-bit storage feature, which not every device has.
uint w_u8(uint o) { return (w[o >> 2] >> ((o & 3u) * 8u)) & 0xffu; }
int w_i8(uint o) { return int(w_u8(o) << 24) >> 24; }
// A 16-bit field at an even offset lies inside one word.
uint w_u16(uint o) { return (w[o >> 2] >> ((o & 2u) * 8u)) & 0xffffu; }
float w_f16(uint o) { return unpackHalf2x16(w_u16(o)).x; }
// Four bytes starting at any offset, as one little-endian word.
uint w_u32(uint o) {
  const uint s = (o & 3u) * 8u;
  const uint lo = w[o >> 2];
  return s == 0u ? lo : (lo >> s) | (w[(o >> 2) + 1u] << (32u - s));
}

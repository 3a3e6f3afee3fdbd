//! LEB128 varints, bounds-checked.

/// Appends `v` as a LEB128 varint.
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint at `*pos` in `buf`, advancing `*pos`. None if the bytes
/// end first or it does not fit in 64 bits.
pub(crate) fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        let bits = u64::from(b & 0x7f);
        if shift == 63 && bits > 1 {
            return None;
        }
        v |= bits << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// [`get`] narrowed to a `u32`.
pub(crate) fn get_u32(buf: &[u8], pos: &mut usize) -> Option<u32> {
    get(buf, pos).and_then(|v| u32::try_from(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_refuse_overlong_or_short_input() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX.into(), u64::MAX] {
            let mut b = Vec::new();
            put(&mut b, v);
            let mut p = 0;
            assert_eq!(get(&b, &mut p), Some(v));
            assert_eq!(p, b.len());
            let mut p = 0;
            assert_eq!(get(&b[..b.len() - 1], &mut p), None);
        }
        let mut p = 0;
        assert_eq!(get(&[0xff; 11], &mut p), None);
        let mut p = 0;
        assert_eq!(
            get(
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                &mut p
            ),
            None
        );
    }
}

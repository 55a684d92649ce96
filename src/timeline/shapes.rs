//! Guesses of the tensor shape behind a repeated allocation size.

/// Shapes a byte count factors into simply: for fp32 and 16-bit element sizes, the elements as a
/// power of two (split into two balanced powers of two) times a small odd factor, e.g.
/// 3,250,585,600 bytes → `1024×1024×775 fp32`. Empty when nothing factors simply.
pub fn tensor_shapes(bytes: u64) -> Vec<String> {
    let mut out = Vec::new();
    for (size, name) in [(4u64, "fp32"), (2, "bf16/fp16")] {
        if bytes == 0 || bytes % size != 0 {
            continue;
        }
        let n = bytes / size;
        let k = n.trailing_zeros();
        let odd = n >> k;
        if k < 4 || odd > 4096 {
            continue;
        }
        let a = 1u64 << (k / 2);
        let b = 1u64 << (k - k / 2);
        out.push(if odd == 1 {
            format!("{a}×{b} {name}")
        } else {
            format!("{b}×{a}×{odd} {name}")
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::tensor_shapes;

    #[test]
    fn seed_step() {
        let shapes = tensor_shapes(3_174_400 * 1024);
        assert_eq!(
            shapes,
            vec!["1024×1024×775 fp32", "2048×1024×775 bf16/fp16"]
        );
        assert_eq!(
            tensor_shapes(1 << 30),
            vec!["16384×16384 fp32", "16384×32768 bf16/fp16"]
        );
        assert!(tensor_shapes(1_000_003).is_empty());
    }
}

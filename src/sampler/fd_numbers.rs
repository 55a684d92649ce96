//! The fd numbers of a process's table as last read, kept between samples so that a table read
//! again costs a `readlink` only for the numbers that are new. Fd numbers are dense from 0 in
//! most processes, so they are kept as ranges: a few words for a table of hundreds.

/// A set of fd numbers, as sorted inclusive ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FdNumbers(Box<[(u32, u32)]>);

impl FdNumbers {
    /// The set of `numbers` (any order, duplicates allowed).
    pub fn new(mut numbers: Vec<u32>) -> FdNumbers {
        numbers.sort_unstable();
        numbers.dedup();
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        for n in numbers {
            match ranges.last_mut() {
                Some((_, end)) if end.checked_add(1) == Some(n) => *end = n,
                _ => ranges.push((n, n)),
            }
        }
        FdNumbers(ranges.into_boxed_slice())
    }

    /// Whether `fd` is in the set.
    pub fn contains(&self, fd: u32) -> bool {
        let i = self.0.partition_point(|&(_, end)| end < fd);
        self.0.get(i).is_some_and(|&(start, _)| start <= fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dense_tables_are_one_range() {
        let s = FdNumbers::new((0..300).collect());
        assert_eq!(s.0.len(), 1);
        assert!(s.contains(0) && s.contains(299) && !s.contains(300));
        assert!(!FdNumbers::default().contains(0));
    }

    proptest! {
        #[test]
        fn holds_exactly_its_numbers(v in proptest::collection::vec(0u32..64, 0..40), q in 0u32..70) {
            let s = FdNumbers::new(v.clone());
            prop_assert_eq!(s.contains(q), v.contains(&q));
        }

        #[test]
        fn the_largest_fd_is_kept(v in proptest::collection::vec(u32::MAX - 3..=u32::MAX, 1..6)) {
            let s = FdNumbers::new(v.clone());
            for n in v { prop_assert!(s.contains(n)); }
        }
    }
}

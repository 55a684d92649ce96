//! Which cards each process of a simulated job sees: the device masks a fleet sets in the
//! environment (`ZE_AFFINITY_MASK`, `ROCR_VISIBLE_DEVICES`, `CUDA_VISIBLE_DEVICES`). A runtime
//! opens a context on every card it sees and on no other.

/// The cards a process sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Every card (no mask).
    All,
    /// Only its own card (a one-device mask per rank, the usual launcher setting).
    Own,
    /// Its card and its pair's (ranks 0 and 1 see cards 0 and 1, ranks 2 and 3 cards 2 and 3,
    /// …; a last odd rank sees its own card only).
    Pairs,
}

impl Visibility {
    /// Every visibility.
    pub const ALL: [Visibility; 3] = [Visibility::All, Visibility::Own, Visibility::Pairs];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Visibility::All => "all",
            Visibility::Own => "own",
            Visibility::Pairs => "pairs",
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Option<Visibility> {
        Visibility::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The cards (indices, ascending) a process whose own card is `home` sees among `count`.
    pub fn visible(self, home: u32, count: u32) -> Vec<u32> {
        match self {
            Visibility::All => (0..count).collect(),
            Visibility::Own => vec![home],
            Visibility::Pairs => {
                let first = home - home % 2;
                (first..(first + 2).min(count)).collect()
            }
        }
    }
}

/// The mask variable of a driver's runtime.
pub fn mask_var(driver: &str) -> &'static str {
    match driver {
        "amdgpu" => "ROCR_VISIBLE_DEVICES",
        "nvidia" => "CUDA_VISIBLE_DEVICES",
        _ => "ZE_AFFINITY_MASK",
    }
}

/// The mask environment of a process that sees `visible` of the cards whose drivers are
/// `drivers` (index = card): one variable per driver with a visible card, holding the visible
/// cards' indices among that driver's cards, as each runtime numbers them.
pub fn mask_env(visible: &[u32], drivers: &[&str]) -> Vec<(String, String)> {
    let mut by_var: Vec<(&'static str, Vec<String>)> = Vec::new();
    for &card in visible {
        let Some(&driver) = drivers.get(card as usize) else {
            continue;
        };
        let index = drivers[..card as usize]
            .iter()
            .filter(|d| **d == driver)
            .count();
        let var = mask_var(driver);
        match by_var.iter_mut().find(|(v, _)| *v == var) {
            Some((_, list)) => list.push(index.to_string()),
            None => by_var.push((var, vec![index.to_string()])),
        }
    }
    by_var
        .into_iter()
        .map(|(v, list)| (v.to_string(), list.join(",")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_split_ranks_two_by_two() {
        assert_eq!(Visibility::Pairs.visible(0, 4), vec![0, 1]);
        assert_eq!(Visibility::Pairs.visible(3, 4), vec![2, 3]);
        assert_eq!(Visibility::Pairs.visible(4, 5), vec![4]);
        assert_eq!(Visibility::Own.visible(2, 4), vec![2]);
        assert_eq!(Visibility::All.visible(2, 3), vec![0, 1, 2]);
    }

    #[test]
    fn masks_number_cards_per_runtime() {
        let drivers = ["xe", "amdgpu", "xe", "amdgpu"];
        assert_eq!(
            mask_env(&[2, 3], &drivers),
            vec![
                ("ZE_AFFINITY_MASK".to_string(), "1".to_string()),
                ("ROCR_VISIBLE_DEVICES".to_string(), "1".to_string())
            ]
        );
        assert_eq!(
            mask_env(&[0, 1], &["nvidia", "nvidia"]),
            vec![("CUDA_VISIBLE_DEVICES".to_string(), "0,1".to_string())]
        );
    }
}

//! Kubernetes pod names from the kubelet's log directory. A cgroup path names a pod only by its
//! uid; the kubelet keeps each pod's logs in `/var/log/pods/<namespace>_<name>_<uid>/`
//! (pkg/kubelet/kuberuntime `BuildPodLogsDirectory`), and namespaces and pod names are DNS
//! labels or subdomains, which cannot hold `_`, so the three parts split without ambiguity.
//! The DaemonSet mounts that directory read-only; without it pods keep only their uid.

use crate::root::Root;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where the kubelet keeps pod logs, below the root.
pub const POD_LOG_DIR: &str = "var/log/pods";

/// A pod's namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodName {
    /// Namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
}

/// One entry of the log directory: `(uid, namespace and name)`; `None` for any other name.
pub fn parse_entry(entry: &str) -> Option<(String, PodName)> {
    let mut parts = entry.split('_');
    let (namespace, name, uid) = (parts.next()?, parts.next()?, parts.next()?);
    let dns = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    };
    let uid_ok = uid.len() >= 32 && uid.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if parts.next().is_some() || !dns(namespace) || !dns(name) || !uid_ok {
        return None;
    }
    let pod = PodName {
        namespace: namespace.to_string(),
        name: name.to_string(),
    };
    Some((uid.to_ascii_lowercase(), pod))
}

/// Every pod with a log directory, by uid (empty where the directory is absent).
pub fn read_pod_names(root: &Root) -> BTreeMap<String, PodName> {
    let Ok(names) = root.list_dir(POD_LOG_DIR) else {
        return BTreeMap::new();
    };
    names
        .iter()
        .filter_map(|n| parse_entry(n.to_str()?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn kubelet_directory_names() {
        let (uid, pod) =
            parse_entry("ml-team_trainer-0_3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b").unwrap();
        assert_eq!(uid, "3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b");
        assert_eq!(
            (pod.namespace.as_str(), pod.name.as_str()),
            ("ml-team", "trainer-0")
        );
        assert_eq!(parse_entry("not-a-pod"), None);
        assert_eq!(
            parse_entry("a_b_c_3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b"),
            None
        );
        assert_eq!(
            parse_entry("Ns_pod_3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b"),
            None
        );
    }

    proptest! {
        #[test]
        fn any_name_parses_or_is_refused_without_panic(s in "\\PC*") {
            if let Some((uid, pod)) = parse_entry(&s) {
                prop_assert_eq!(format!("{}_{}_{}", pod.namespace, pod.name, uid), s.to_ascii_lowercase());
            }
        }
    }
}

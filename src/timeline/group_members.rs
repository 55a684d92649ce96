//! Timeline and node findings as members of the findings' groups (`findings::group`): grouped
//! by kind and their worst severity over the recording.

use super::{NodeFinding, TimelineFinding};
use crate::findings::group::Member;
use crate::findings::{Kind, Severity};

impl Member for TimelineFinding {
    type Kind = Kind;
    fn kind(&self) -> Kind {
        self.finding.kind
    }
    /// The worst severity over the recording: the row says how bad it got.
    fn severity(&self) -> Severity {
        self.worst_severity.unwrap_or(self.finding.severity)
    }
    fn pid(&self) -> Option<u32> {
        self.finding.pid
    }
    fn peer(&self) -> Option<&str> {
        self.finding.device.as_deref()
    }
    fn bytes(&self) -> u64 {
        self.finding.bytes
    }
}

impl Member for NodeFinding {
    type Kind = Kind;
    fn kind(&self) -> Kind {
        self.finding.peak.kind
    }
    /// The worst severity over the node's recording, as `show` of that node says.
    fn severity(&self) -> Severity {
        self.finding.worst_severity.max(self.finding.peak.severity)
    }
    fn pid(&self) -> Option<u32> {
        self.finding.peak.pid
    }
    fn peer(&self) -> Option<&str> {
        self.finding.peak.peer.as_deref()
    }
    fn bytes(&self) -> u64 {
        self.finding.peak.bytes
    }
}

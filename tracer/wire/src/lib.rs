//! The events gpuledger's tracer library sends to `gpuledger record`: one fixed-size,
//! little-endian record of [`EVENT_BYTES`] bytes per memory API call, several to a datagram.
//!
//! Layout of one event (offsets in bytes):
//! `0` u64 time (ns since the Unix epoch), `8` u32 pid, `12` u32 tid, `16` u8 [`Api`],
//! `17` u8 [`Op`], `18` u8 [`Platform`], `19` u8 reserved (0), `20` i32 device ordinal (-1: host
//! or unknown), `24` u64 bytes, `32` u64 address (or handle), `40` u32 flags, `44` i32 result
//! code of the call (0: success; for [`Op::Off`], the [`OffReason`]).
//!
//! Level Zero residency events ([`Api::Residency`], [`Api::PeerResidency`]) carry the device the
//! memory is made resident on in `device`, and in `flags` the allocation's own device
//! ([`residency_flags`], [`owner_device`]) and whether the interposer answered the call itself
//! ([`SKIPPED`]).

/// Size of one encoded event.
pub const EVENT_BYTES: usize = 48;
/// Events per datagram at most (a datagram stays far below the socket's limits).
pub const EVENTS_PER_DATAGRAM: usize = 64;
/// The environment variable naming the Unix datagram socket the tracer sends to when the
/// inherited channel ([`FD_ENV`]) is not open in its process (a program that closed inherited
/// descriptors, such as Python's `subprocess` with its default `close_fds`).
pub const SOCKET_ENV: &str = "GPULEDGER_TRACE_SOCKET";
/// The environment variable naming the job's end of the datagram socket pair it inherited from
/// gpuledger, as [`Inherited`] writes it.
pub const FD_ENV: &str = "GPULEDGER_TRACE_FD";

/// The job's end of the trace channel: a descriptor number and the socket's inode, so that a
/// process where the number was closed and reused for another file never writes events into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inherited {
    /// The descriptor number in the job's processes.
    pub fd: i32,
    /// The socket's inode (`st_ino` of the descriptor).
    pub inode: u64,
}

impl Inherited {
    /// The value of [`FD_ENV`]: `FD:INODE`.
    pub fn to_env(self) -> String {
        format!("{}:{}", self.fd, self.inode)
    }

    /// Reads a value of [`FD_ENV`]; `None` when it is not `FD:INODE` with a non-negative fd.
    pub fn parse(value: &str) -> Option<Inherited> {
        let (fd, inode) = value.split_once(':')?;
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(fd) || !all_digits(inode) {
            return None;
        }
        Some(Inherited {
            fd: fd.parse().ok()?,
            inode: inode.parse().ok()?,
        })
    }
}

/// The environment variable that makes the Level Zero interposer answer peer residency calls
/// itself (`experiment --control skip-peer-residency`).
pub const SKIP_PEER_RESIDENCY_ENV: &str = "GPULEDGER_ZE_SKIP_PEER_RESIDENCY";

/// Which memory a call is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Api {
    /// The tracer itself (status events).
    Tracer,
    /// Device memory (`cuMemAlloc`, `zeMemAllocDevice`).
    Device,
    /// Host memory allocated pinned (`cuMemHostAlloc`, `cuMemAllocHost`, `zeMemAllocHost`).
    HostPinned,
    /// Existing host pages pinned (`cuMemHostRegister`).
    Registered,
    /// Managed / shared memory (`cuMemAllocManaged`, `zeMemAllocShared`).
    Managed,
    /// Stream-ordered pool memory (`cuMemAllocAsync`, `cuMemAllocFromPoolAsync`).
    Pooled,
    /// Virtual memory management: physical handles and their mappings (`cuMemCreate`, `cuMemMap`).
    Vmm,
    /// Residency of memory on a device (`zeContextMakeMemoryResident`, `zeContextEvictMemory`).
    Residency,
    /// Inter-process handles (`zeMemOpenIpcHandle`).
    Ipc,
    /// Contexts (`zeContextCreate`).
    Context,
    /// Residency of memory on a device other than the one it was allocated on
    /// (`zeContextMakeMemoryResident` of a peer's memory, compute-runtime#953).
    PeerResidency,
}

impl Api {
    const ALL: [Api; 11] = [
        Api::Tracer,
        Api::Device,
        Api::HostPinned,
        Api::Registered,
        Api::Managed,
        Api::Pooled,
        Api::Vmm,
        Api::Residency,
        Api::Ipc,
        Api::Context,
        Api::PeerResidency,
    ];

    /// The name used in recordings and tables.
    pub fn name(self) -> &'static str {
        match self {
            Api::Tracer => "tracer",
            Api::Device => "device",
            Api::HostPinned => "host_pinned",
            Api::Registered => "registered",
            Api::Managed => "managed",
            Api::Pooled => "pooled",
            Api::Vmm => "vmm",
            Api::Residency => "residency",
            Api::Ipc => "ipc",
            Api::Context => "context",
            Api::PeerResidency => "peer_residency",
        }
    }

    /// The kind a name stands for.
    pub fn from_name(s: &str) -> Option<Api> {
        Api::ALL.into_iter().find(|a| a.name() == s)
    }

    /// Whether the memory lives in host RAM (pinned by the driver).
    pub fn is_host(self) -> bool {
        matches!(self, Api::HostPinned | Api::Registered)
    }
}

/// What a call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Allocated (or registered, or created a physical handle).
    Alloc,
    /// Freed (or unregistered, or released a handle).
    Free,
    /// Mapped a handle into an address range.
    Map,
    /// Unmapped an address range.
    Unmap,
    /// Made memory resident on a device.
    MakeResident,
    /// Evicted memory from a device.
    Evict,
    /// Opened an inter-process handle.
    OpenIpc,
    /// Closed an inter-process handle.
    CloseIpc,
    /// Created a context.
    CreateContext,
    /// Status: tracing started in this process.
    Started,
    /// Status: tracing is off in this process; `result` holds the [`OffReason`].
    Off,
    /// Status: `bytes` events were dropped since the last such event (ring full or reader slow).
    Dropped,
}

impl Op {
    const ALL: [Op; 12] = [
        Op::Alloc,
        Op::Free,
        Op::Map,
        Op::Unmap,
        Op::MakeResident,
        Op::Evict,
        Op::OpenIpc,
        Op::CloseIpc,
        Op::CreateContext,
        Op::Started,
        Op::Off,
        Op::Dropped,
    ];

    /// The name used in recordings.
    pub fn name(self) -> &'static str {
        match self {
            Op::Alloc => "alloc",
            Op::Free => "free",
            Op::Map => "map",
            Op::Unmap => "unmap",
            Op::MakeResident => "make_resident",
            Op::Evict => "evict",
            Op::OpenIpc => "open_ipc",
            Op::CloseIpc => "close_ipc",
            Op::CreateContext => "create_context",
            Op::Started => "started",
            Op::Off => "off",
            Op::Dropped => "dropped",
        }
    }

    /// The op a name stands for.
    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == s)
    }
}

/// Whose API was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Platform {
    /// The CUDA driver API (through CUPTI).
    Cuda,
    /// Intel Level Zero (through the loader's entry points).
    LevelZero,
}

impl Platform {
    /// The name used in recordings.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Cuda => "cuda",
            Platform::LevelZero => "level_zero",
        }
    }

    /// The name of a call's result code, where known (ref: CUDA 13.0 `include/cuda.h`,
    /// `cudaError_enum`; Level Zero 1.8 `include/ze_api.h`, `ze_result_t`).
    pub fn result_name(self, code: i32) -> Option<&'static str> {
        match self {
            Platform::Cuda => cuda_result_name(code),
            Platform::LevelZero => ze_result_name(code as u32),
        }
    }

    /// Whether `code` says the allocation failed for want of memory (CUDA's out-of-memory, Level
    /// Zero's out of host or device memory).
    pub fn is_out_of_memory(self, code: i32) -> bool {
        match self {
            Platform::Cuda => code == 2,
            Platform::LevelZero => matches!(code as u32, 0x7000_0002 | 0x7000_0003),
        }
    }

    /// The platform a name stands for.
    pub fn from_name(s: &str) -> Option<Platform> {
        [Platform::Cuda, Platform::LevelZero]
            .into_iter()
            .find(|p| p.name() == s)
    }
}

/// Residency `flags` bit: the interposer answered the call itself, without forwarding it to the
/// driver (`experiment --control skip-peer-residency`).
pub const SKIPPED: u32 = 1 << 31;

/// The `flags` of a residency event: the allocation's own device (`None`: unknown) and whether
/// the call was answered without reaching the driver.
pub fn residency_flags(owner: Option<u32>, skipped: bool) -> u32 {
    let owner = owner.map_or(0, |d| d.min(0xfffe) + 1);
    owner | if skipped { SKIPPED } else { 0 }
}

/// The allocation's own device in a residency event's `flags`.
pub fn owner_device(flags: u32) -> Option<u32> {
    (flags & 0xffff).checked_sub(1)
}

fn cuda_result_name(code: i32) -> Option<&'static str> {
    Some(match code {
        0 => "CUDA_SUCCESS",
        1 => "CUDA_ERROR_INVALID_VALUE",
        2 => "CUDA_ERROR_OUT_OF_MEMORY",
        3 => "CUDA_ERROR_NOT_INITIALIZED",
        4 => "CUDA_ERROR_DEINITIALIZED",
        100 => "CUDA_ERROR_NO_DEVICE",
        101 => "CUDA_ERROR_INVALID_DEVICE",
        201 => "CUDA_ERROR_INVALID_CONTEXT",
        400 => "CUDA_ERROR_INVALID_HANDLE",
        700 => "CUDA_ERROR_ILLEGAL_ADDRESS",
        712 => "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
        713 => "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
        800 => "CUDA_ERROR_NOT_PERMITTED",
        801 => "CUDA_ERROR_NOT_SUPPORTED",
        999 => "CUDA_ERROR_UNKNOWN",
        _ => return None,
    })
}

fn ze_result_name(code: u32) -> Option<&'static str> {
    Some(match code {
        0 => "ZE_RESULT_SUCCESS",
        0x7000_0001 => "ZE_RESULT_ERROR_DEVICE_LOST",
        0x7000_0002 => "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY",
        0x7000_0003 => "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
        0x7001_0001 => "ZE_RESULT_ERROR_NOT_AVAILABLE",
        0x7800_0001 => "ZE_RESULT_ERROR_UNINITIALIZED",
        0x7800_0003 => "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE",
        0x7800_0004 => "ZE_RESULT_ERROR_INVALID_ARGUMENT",
        0x7800_0005 => "ZE_RESULT_ERROR_INVALID_NULL_HANDLE",
        0x7800_0007 => "ZE_RESULT_ERROR_INVALID_NULL_POINTER",
        0x7800_0008 => "ZE_RESULT_ERROR_INVALID_SIZE",
        0x7800_0009 => "ZE_RESULT_ERROR_UNSUPPORTED_SIZE",
        0x7fff_fffe => "ZE_RESULT_ERROR_UNKNOWN",
        _ => return None,
    })
}

/// Why tracing is off in a process (the `result` of an [`Op::Off`] event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffReason {
    /// No CUPTI library was found.
    NoCupti,
    /// The CUDA driver did not say its version, or it is older than CUPTI 12.
    UnknownRuntime,
    /// CUPTI refused the subscription (another tool holds it).
    SubscribeFailed,
}

impl OffReason {
    fn code(self) -> i32 {
        match self {
            OffReason::NoCupti => 1,
            OffReason::UnknownRuntime => 2,
            OffReason::SubscribeFailed => 3,
        }
    }

    /// The reason a code stands for.
    pub fn from_code(c: i32) -> Option<OffReason> {
        [
            OffReason::NoCupti,
            OffReason::UnknownRuntime,
            OffReason::SubscribeFailed,
        ]
        .into_iter()
        .find(|r| r.code() == c)
    }

    /// What a user reads.
    pub fn describe(self) -> &'static str {
        match self {
            OffReason::NoCupti => "no CUPTI library found (CUDA_HOME, /usr/local/cuda, the job's nvidia wheels, ldconfig)",
            OffReason::UnknownRuntime => "the CUDA driver version is unknown or older than 12",
            OffReason::SubscribeFailed => "CUPTI refused the subscription (another profiler is attached)",
        }
    }

    /// The event result carrying this reason.
    pub fn as_result(self) -> i32 {
        self.code()
    }
}

/// One traced call (or status event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Nanoseconds since the Unix epoch.
    pub t_ns: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Memory kind.
    pub api: Api,
    /// What the call did.
    pub op: Op,
    /// Whose API.
    pub platform: Platform,
    /// Device ordinal, `None` for host memory or where unknown.
    pub device: Option<u32>,
    /// Bytes the call asked for (0 where the call does not say, e.g. a free).
    pub bytes: u64,
    /// Address or handle.
    pub address: u64,
    /// The call's flags.
    pub flags: u32,
    /// The call's return code (0: success).
    pub result: i32,
}

/// An event that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The datagram's length is no multiple of [`EVENT_BYTES`].
    Length(usize),
    /// A kind, op or platform byte this build does not know.
    UnknownByte {
        /// Which field.
        field: &'static str,
        /// Its value.
        value: u8,
    },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Length(n) => write!(
                f,
                "trace datagram of {n} bytes is no multiple of {EVENT_BYTES}"
            ),
            DecodeError::UnknownByte { field, value } => {
                write!(f, "trace event with unknown {field} {value}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

fn api_byte(a: Api) -> u8 {
    Api::ALL.iter().position(|x| *x == a).unwrap_or(0) as u8
}

fn op_byte(o: Op) -> u8 {
    Op::ALL.iter().position(|x| *x == o).unwrap_or(0) as u8
}

impl Event {
    /// Encodes the event into `out`.
    pub fn encode(&self, out: &mut [u8; EVENT_BYTES]) {
        out[0..8].copy_from_slice(&self.t_ns.to_le_bytes());
        out[8..12].copy_from_slice(&self.pid.to_le_bytes());
        out[12..16].copy_from_slice(&self.tid.to_le_bytes());
        out[16] = api_byte(self.api);
        out[17] = op_byte(self.op);
        out[18] = match self.platform {
            Platform::Cuda => 0,
            Platform::LevelZero => 1,
        };
        out[19] = 0;
        let dev = self.device.map_or(-1, |d| d.min(i32::MAX as u32) as i32);
        out[20..24].copy_from_slice(&dev.to_le_bytes());
        out[24..32].copy_from_slice(&self.bytes.to_le_bytes());
        out[32..40].copy_from_slice(&self.address.to_le_bytes());
        out[40..44].copy_from_slice(&self.flags.to_le_bytes());
        out[44..48].copy_from_slice(&self.result.to_le_bytes());
    }

    /// Decodes one event.
    pub fn decode(b: &[u8; EVENT_BYTES]) -> Result<Event, DecodeError> {
        let u64_at = |i: usize| {
            u64::from_le_bytes([
                b[i],
                b[i + 1],
                b[i + 2],
                b[i + 3],
                b[i + 4],
                b[i + 5],
                b[i + 6],
                b[i + 7],
            ])
        };
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let unknown = |field, value| DecodeError::UnknownByte { field, value };
        let api = *Api::ALL.get(b[16] as usize).ok_or(unknown("api", b[16]))?;
        let op = *Op::ALL.get(b[17] as usize).ok_or(unknown("op", b[17]))?;
        let platform = match b[18] {
            0 => Platform::Cuda,
            1 => Platform::LevelZero,
            v => return Err(unknown("platform", v)),
        };
        let dev = u32_at(20) as i32;
        Ok(Event {
            t_ns: u64_at(0),
            pid: u32_at(8),
            tid: u32_at(12),
            api,
            op,
            platform,
            device: u32::try_from(dev).ok(),
            bytes: u64_at(24),
            address: u64_at(32),
            flags: u32_at(40),
            result: u32_at(44) as i32,
        })
    }

    /// Decodes a datagram of whole events.
    pub fn decode_all(datagram: &[u8]) -> Result<Vec<Event>, DecodeError> {
        if datagram.len() % EVENT_BYTES != 0 {
            return Err(DecodeError::Length(datagram.len()));
        }
        datagram
            .chunks_exact(EVENT_BYTES)
            .map(|c| {
                let mut b = [0u8; EVENT_BYTES];
                b.copy_from_slice(c);
                Event::decode(&b)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;

//! Reading `ptxas -v` and deciding whether a CTA fits the register file.
//!
//! The register rule follows NVIDIA's occupancy calculator for sm_50 and
//! up: registers are allocated per warp, rounded up to
//! [`REGISTER_ALLOCATION_UNIT`]; the file (64K 32-bit registers per SM, and
//! at most 64K per CTA, on every chip from sm_50 to sm_90 except the
//! Tegra parts, which we do not target) is split evenly between
//! [`REGISTER_FILE_SUB_PARTITIONS`] warp schedulers, and a warp's registers
//! live in one of them. A CTA can launch only when all its warps fit at
//! once; otherwise the launch fails with "too many resources requested".

/// Registers are handed to a warp in blocks of this many.
pub const REGISTER_ALLOCATION_UNIT: u32 = 256;

/// Warp schedulers per SM, each owning a quarter of the register file.
pub const REGISTER_FILE_SUB_PARTITIONS: u32 = 4;

const WARP_THREADS: u32 = 32;

/// 32-bit registers one CTA may use on the chips this back end targets.
pub fn registers_per_cta_max() -> u32 {
    64 * 1024
}

/// What `ptxas -v` reports for one entry function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceUsage {
    pub registers: u32,
    /// Bytes of spill store instructions in the code (a static count).
    pub spill_store_bytes: u64,
    /// Bytes of spill load instructions in the code (a static count).
    pub spill_load_bytes: u64,
    /// Per-thread local memory: private arrays plus spill slots.
    pub stack_frame_bytes: u64,
    /// Static shared memory.
    pub shared_bytes: u64,
}

impl ResourceUsage {
    /// Spill traffic in the code, stores and loads together; 0 means
    /// everything lives in registers (private arrays aside).
    pub fn spill_bytes(&self) -> u64 {
        self.spill_store_bytes + self.spill_load_bytes
    }
}

/// Why a CTA of `threads` threads using `registers_per_thread` registers
/// each cannot launch, or `None` when it can.
pub fn register_file_overflow(registers_per_thread: u32, threads: u32) -> Option<String> {
    let warps = threads.div_ceil(WARP_THREADS);
    let fit = warps_that_fit(registers_per_thread);
    (warps > fit).then(|| {
        format!(
            "{registers_per_thread} registers per thread (ptxas -v): a warp takes {} \
             registers (allocated in units of {REGISTER_ALLOCATION_UNIT}), so the \
             {}-register file ({REGISTER_FILE_SUB_PARTITIONS} sub-partitions) holds \
             {fit} warps, and {threads} threads are {warps} warps",
            registers_per_warp(registers_per_thread),
            registers_per_cta_max()
        )
    })
}

fn registers_per_warp(registers_per_thread: u32) -> u32 {
    (registers_per_thread.max(1) * WARP_THREADS).next_multiple_of(REGISTER_ALLOCATION_UNIT)
}

/// How many warps of one CTA can hold `registers_per_thread` registers each.
pub fn warps_that_fit(registers_per_thread: u32) -> u32 {
    let per_sub_partition = registers_per_cta_max() / REGISTER_FILE_SUB_PARTITIONS;
    (per_sub_partition / registers_per_warp(registers_per_thread)) * REGISTER_FILE_SUB_PARTITIONS
}

/// The usage of entry function `entry` in the text `ptxas -v` printed, or
/// `None` when the text has no such entry or no register count for it.
pub fn parse_verbose(text: &str, entry: &str) -> Option<ResourceUsage> {
    let start_marker = format!("Compiling entry function '{entry}'");
    let after = &text[text.find(&start_marker)? + start_marker.len()..];
    let section = after
        .find("Compiling entry function '")
        .map_or(after, |end| &after[..end]);

    let mut usage = ResourceUsage::default();
    let mut registers = None;
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        if line
            .trim_end()
            .ends_with(&format!("Function properties for {entry}"))
        {
            // The next line: "N bytes stack frame, N bytes spill stores, N bytes spill loads".
            let properties = lines.next()?;
            usage.stack_frame_bytes = number_before(properties, "bytes stack frame")?;
            usage.spill_store_bytes = number_before(properties, "bytes spill stores")?;
            usage.spill_load_bytes = number_before(properties, "bytes spill loads")?;
        } else if let Some(rest) = line.split_once("Used ").map(|(_, r)| r)
            && registers.is_none()
        {
            registers = Some(number_before(rest, "registers")?);
            usage.shared_bytes = number_before(rest, "bytes smem").unwrap_or(0);
        }
    }
    usage.registers = u32::try_from(registers?).ok()?;
    Some(usage)
}

/// The integer right before ` <what>` in `line` ("64 registers" -> 64).
fn number_before(line: &str, what: &str) -> Option<u64> {
    let end = line.find(&format!(" {what}"))?;
    line[..end].rsplit([' ', ',', ':']).next()?.parse().ok()
}

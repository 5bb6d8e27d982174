//! The runtime's error type.

/// Result alias for runtime operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the runtime. Each variant says what was
/// expected and what was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two tensor parameters bind the same symbolic dim to different extents.
    #[error(
        "kernel `{kernel}`: dim `{dim}` is {first_extent} in `{first_param}` but {second_extent} in `{second_param}`"
    )]
    DimMismatch {
        kernel: String,
        dim: String,
        first_param: String,
        first_extent: usize,
        second_param: String,
        second_extent: usize,
    },
    /// A tensor argument has a different rank than its parameter declares.
    #[error(
        "kernel `{kernel}`: parameter `{param}` expects a rank-{expected} tensor, got rank {actual}"
    )]
    RankMismatch {
        kernel: String,
        param: String,
        expected: usize,
        actual: usize,
    },
    /// `tensor_from` / `Tile::from_vec` got a data length that does not match the shape.
    #[error("shape {shape:?} holds {expected} elements but {actual} were given")]
    LenMismatch {
        shape: Vec<usize>,
        expected: usize,
        actual: usize,
    },
    /// A quantized tensor's shape does not fit its block format.
    #[error("quantized tensor of format {format}, shape {shape:?}: {reason}")]
    QuantShape {
        format: &'static str,
        shape: Vec<usize>,
        reason: String,
    },
    /// A quantized tensor's bytes are not the blocks its shape needs.
    #[error(
        "quantized tensor of format {format}, shape {shape:?}: needs {expected} bytes of blocks, got {actual}"
    )]
    QuantBytes {
        format: &'static str,
        shape: Vec<usize>,
        expected: usize,
        actual: usize,
    },
    /// The quant layer refused an operation (e.g. a format it cannot quantize).
    #[error("quantized format {format}: {message}")]
    Quant {
        format: &'static str,
        message: String,
    },
    /// A shape's element count overflows `usize`.
    #[error("shape {shape:?} has more elements than fit in memory")]
    ShapeOverflow { shape: Vec<usize> },
    /// Strides given for a tensor do not match its rank or reach past its buffer.
    #[error(
        "strided view {shape:?} / strides {strides:?} at offset {offset} reaches past the buffer of {buffer_len} elements (or rank differs)"
    )]
    BadStrides {
        shape: Vec<usize>,
        strides: Vec<usize>,
        offset: usize,
        buffer_len: usize,
    },
    /// A slice has a different number of subscripts than the tensor has dims.
    #[error("slice has {slices} subscripts but the tensor has rank {tensor_rank}")]
    SliceRank { tensor_rank: usize, slices: usize },
    /// A tile would have more dims than the host tile library supports.
    #[error("tile of rank {rank} requested; tiles have at most {max} dims")]
    TileRank { rank: usize, max: usize },
    /// Two tile shapes that must agree (broadcast, contraction, store) do not.
    #[error("{op}: shapes {lhs:?} and {rhs:?} are incompatible ({expected})")]
    ShapeMismatch {
        op: &'static str,
        lhs: Vec<usize>,
        rhs: Vec<usize>,
        expected: &'static str,
    },
    /// An op got a tile of a shape it does not accept.
    #[error("{op}: got shape {shape:?}, expected {expected}")]
    BadShape {
        op: &'static str,
        shape: Vec<usize>,
        expected: &'static str,
    },
    /// `reshape` to a shape with a different element count.
    #[error("reshape: cannot reshape {from:?} ({from_len} elements) to {to:?} ({to_len} elements)")]
    ReshapeLen {
        from: Vec<usize>,
        from_len: usize,
        to: Vec<usize>,
        to_len: usize,
    },
    /// A launch grid dimension does not fit the `i32` program ids.
    #[error("launch grid {grid:?} has a dim larger than {max}")]
    GridTooLarge { grid: [usize; 3], max: usize },
    /// A `for` loop's step was 0 at run time (a literal 0 is a compile
    /// error); the GPU back end traps on the same loop.
    #[error("kernel `{kernel}`: the step of `for {var} in range(..)` is 0 at run time")]
    LoopStepZero { kernel: String, var: String },
    /// A `@grid` expression evaluated to an extent no grid can have (a
    /// negative one): the launch runs nothing and fails instead of running
    /// zero programs in silence.
    #[error(
        "kernel `{kernel}`: grid axis {axis} evaluates to {value}; a grid extent must be 0 or more"
    )]
    GridExtent {
        kernel: String,
        axis: usize,
        value: i64,
    },
    /// A backend was requested that this build or machine cannot provide.
    #[error("backend `{backend}` is not available: {reason}")]
    BackendUnavailable {
        backend: &'static str,
        reason: String,
    },
    /// A kernel built with `PHOBOS_HOST_SIMD` set to one level was launched
    /// in a process below that level (the CPU's, capped by `PHOBOS_SIMD`).
    #[error(
        "kernel `{kernel}` was built with only its {built} host body (PHOBOS_HOST_SIMD at build time), but this process runs at level {level} (the CPU's, capped by PHOBOS_SIMD); rebuild with PHOBOS_HOST_SIMD unset or `all` to run it here"
    )]
    HostSimdUnavailable {
        kernel: String,
        built: &'static str,
        level: &'static str,
    },
    /// `PHOBOS_BACKEND` holds something other than `host` or `cuda`.
    #[error("PHOBOS_BACKEND={value:?} is not a backend; expected `host` or `cuda`")]
    UnknownBackend { value: String },
    /// The hand-written quantized matmul refused its operands.
    #[error("quantized matmul: {0}")]
    QMatmul(#[from] crate::host::qmatmul::QMatmulError),
    /// `PHOBOS_HOST_IMPL` holds something other than `hand` or `generated`.
    #[error(
        "PHOBOS_HOST_IMPL={value:?} is not a host implementation; expected `hand` or `generated`"
    )]
    BadHostImpl { value: String },
    /// An operation needs the data on a particular backend.
    #[error("{op}: needs a tensor on the {expected} backend, this one is on {actual}")]
    WrongBackend {
        op: &'static str,
        expected: &'static str,
        actual: &'static str,
    },
    /// A tensor over memory borrowed from the caller
    /// ([`HostDevice::with_borrowed`](crate::HostDevice::with_borrowed))
    /// was asked for something that could outlive or break the borrow: a
    /// view (which would share the borrowed memory beyond the scope), or a
    /// write to the read-only input.
    #[error("{op}: the tensor borrows the caller's memory ({reason})")]
    Borrowed {
        op: &'static str,
        reason: &'static str,
    },
    /// A program of a host launch panicked; the launch stopped handing out
    /// programs and returned this instead.
    #[error("a kernel program panicked: {message}")]
    ProgramPanicked { message: String },
    /// A failure reported by a backend (driver, allocation, launch).
    #[error("{backend} backend: {message}")]
    Backend {
        backend: &'static str,
        message: String,
    },
}

//! Example kernels, shared by the runnable examples and the tests.

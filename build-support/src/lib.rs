//! The Phobos kernel compiler. See ARCHITECTURE.md.

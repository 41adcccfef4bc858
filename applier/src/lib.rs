//! mesh-apply: makes one node's plan true on the host. Depends on `plan` only.
#![forbid(unsafe_code)]

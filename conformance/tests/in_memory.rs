//! The conformance suite on the in-memory transport.

xrdma_conformance::suite!(xrdma_conformance::MemHarness::open);

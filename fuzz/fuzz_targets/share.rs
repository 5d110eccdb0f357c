//! Share links: any fragment opens a sandbox or says why it cannot. Half the inputs are
//! taken as the link's text; the other half as the JSON state inside a well-formed link,
//! so that the decoder's later layers are reached too. A link may replay a day of simulated
//! time on any cluster its set-up declares; here ten minutes and 2,000 of the cluster's
//! tasks at most, so that the executions go to decoding and replaying (the seed sweep
//! simulates the hours): one task can be a burst of 500 pod creations, and a link that
//! creates thousands of pods took 19 seconds an execution under a 20,000-task cap.
#![no_main]
use kubeloop_core::sandbox::{Replay, Sandbox};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((first, rest)) = data.split_first() else { return };
    let fragment = if first % 2 == 0 {
        match std::str::from_utf8(rest) {
            Ok(s) => s.to_string(),
            Err(_) => return,
        }
    } else {
        Sandbox::link_for_state(rest)
    };
    let _ = Sandbox::open_within(&fragment, "", Replay { longest: 10 * 60 * 1000, tasks: 2_000 });
});

//! Layer 1, the foundation: what every other layer speaks in. The JSON value tree, the
//! simulated clock and random streams, quantities, labels and selectors, the API object
//! helpers and the resource table, `Status`, and YAML in. Nothing here knows that an API
//! server exists.

pub mod api;
pub mod cron;
pub mod labels;
pub mod manifest;
pub mod pki;
pub mod pod;
pub mod quantity;
pub mod sim;
pub mod sort;
pub mod status;
pub mod value;
pub mod volume;

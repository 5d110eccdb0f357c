//! Inputs the CEL fuzz target (`scripts/fuzz cel`) found to crash, kept as regressions.

use kubeloop_cel::Engine;

#[test]
fn a_message_literal_is_an_undeclared_reference_not_a_panic() {
    let mut e = Engine::default();
    let r = e.check("e0{}");
    assert_eq!(r, Err("ERROR: <input>: undeclared reference to 'e0' (in container '')".to_string()));
    assert!(e.eval("[1].all(x, x == 1) && Point{x: 1}.x == 1", &[("object", &serde_json::json!({}))]).is_err());
}

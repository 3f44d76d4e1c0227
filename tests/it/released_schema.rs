//! The JSON messages only grow: every message, property, type and required field of the
//! shape released on `main` (`contract/released/messages.v2.schema.json`, a frozen copy of
//! `contract/messages.schema.json` as version 2 was released) is still in the current
//! schema, unchanged. A new message, a new optional property or a new enum value is an
//! addition; a renamed or removed field, a changed type or a field no longer required is a
//! change of shape, which needs a new version (and a new frozen copy).

use serde_json::Value;

use crate::support::repo;

fn schema(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(repo().join(path)).unwrap()).unwrap()
}

/// Whether the current `now` still holds all of the frozen `then`; each way it does not
/// is pushed to `broken`, with where (`at`).
fn still_holds(then: &Value, now: &Value, at: &str, broken: &mut Vec<String>) {
    for key in ["type", "const", "additionalProperties", "minItems", "maxItems"] {
        if then.get(key) != now.get(key) {
            broken.push(format!("{at}: `{key}` was {:?}, is {:?}", then.get(key), now.get(key)));
        }
    }
    // Enum values and required fields may be added, never dropped.
    for key in ["enum", "required"] {
        let Some(was) = then.get(key).and_then(Value::as_array) else { continue };
        let is = now.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
        for v in was.iter().filter(|v| !is.contains(v)) {
            broken.push(format!("{at}: {v} is no longer in `{key}`"));
        }
    }
    if let Some(props) = then.get("properties").and_then(Value::as_object) {
        for (name, was) in props {
            match now.get("properties").and_then(|p| p.get(name)) {
                Some(is) => still_holds(was, is, &format!("{at}.{name}"), broken),
                None => broken.push(format!("{at}: the property `{name}` is gone")),
            }
        }
    }
    if let Some(was) = then.get("items") {
        still_holds(was, now.get("items").unwrap_or(&Value::Null), &format!("{at}[]"), broken);
    }
    if let Some(was) = then.get("oneOf").and_then(Value::as_array) {
        let is = now.get("oneOf").and_then(Value::as_array).cloned().unwrap_or_default();
        for (i, w) in was.iter().enumerate() {
            match is.get(i) {
                Some(n) => still_holds(w, n, &format!("{at}|{i}"), broken),
                None => broken.push(format!("{at}: the shape {i} of `oneOf` is gone")),
            }
        }
    }
}

/// Every way `now` breaks the released `then`: a message gone or changed, a version bumped
/// without a new frozen copy.
fn breaks(then: &Value, now: &Value) -> Vec<String> {
    let mut broken = Vec::new();
    if then["version"] != now["version"] {
        broken.push(format!(
            "the version is {} while the frozen copy is {}: freeze the new shape as \
             contract/released/messages.v{}.schema.json",
            now["version"], then["version"], now["version"]
        ));
    }
    let refs = |s: &Value| -> Vec<Value> { s["oneOf"].as_array().cloned().unwrap_or_default() };
    for r in refs(then).iter().filter(|r| !refs(now).contains(r)) {
        broken.push(format!("the top-level list no longer names {r}"));
    }
    for (reason, was) in then["$defs"].as_object().unwrap() {
        match now["$defs"].get(reason) {
            Some(is) => still_holds(was, is, reason, &mut broken),
            None => broken.push(format!("the message `{reason}` is gone")),
        }
    }
    broken
}

#[test]
fn the_messages_only_grow_from_the_released_shape() {
    let then = schema("contract/released/messages.v2.schema.json");
    let now = schema("contract/messages.schema.json");
    let broken = breaks(&then, &now);
    assert!(broken.is_empty(), "the messages' shape changed beyond additions:\n{}", broken.join("\n"));
}

#[test]
fn the_check_refuses_a_removed_field_a_new_type_and_a_dropped_enum_value() {
    // A guard for the guard: each change of shape is named; additions are not.
    let then = schema("contract/released/messages.v2.schema.json");
    let mut removed = then.clone();
    removed["$defs"]["stage-done"]["properties"].as_object_mut().unwrap().remove("wall_ms");
    assert_eq!(breaks(&then, &removed), ["stage-done: the property `wall_ms` is gone"]);
    let mut retyped = then.clone();
    retyped["$defs"]["stage-done"]["properties"]["passes"]["type"] = "string".into();
    assert_eq!(breaks(&then, &retyped).len(), 1, "{:?}", breaks(&then, &retyped));
    let mut narrowed = then.clone();
    narrowed["$defs"]["check-finished"]["properties"]["verdict"]["enum"] = serde_json::json!(["clean"]);
    assert_eq!(breaks(&then, &narrowed).len(), 2, "{:?}", breaks(&then, &narrowed));
    let mut grown = then.clone();
    grown["$defs"]["stage-done"]["properties"]["extra"] = serde_json::json!({"type": "string"});
    grown["$defs"]["new-message"] = serde_json::json!({"type": "object"});
    grown["$defs"]["check-finished"]["properties"]["verdict"]["enum"] =
        serde_json::json!(["regressed", "ambiguous", "clean", "new"]);
    assert!(breaks(&then, &grown).is_empty(), "{:?}", breaks(&then, &grown));
}

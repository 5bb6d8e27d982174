//! A JSON Schema compiled into the shapes the byte matcher walks.
//!
//! Only the structural keywords are enforced: `type` (one or several),
//! `properties`, `required`, `additionalProperties`, `items`, `minItems`,
//! `maxItems`, `enum`, `const`, `anyOf`/`oneOf`, a one-element `allOf`, and
//! local `$ref`s (`#`, `#/$defs/..`, `#/definitions/..`), recursion
//! included. Keywords that only narrow a value further (`pattern`,
//! `minLength`, `format`, `minimum`, ...) are not enforced: the output is
//! still JSON of the schema's shape. Keywords whose shape the matcher cannot
//! follow (`prefixItems`, `not`, `if`, `patternProperties`, ...) are refused,
//! so a client never gets output that silently ignores them.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Index of a [`Node`] in [`JsonShape::nodes`].
pub type NodeId = u32;
/// Index of a set of JSON-encoded literals in [`JsonShape::literal_sets`].
pub type SetId = u32;

/// The most alternatives one `enum` or one object's property list may
/// have: the matcher tracks the live ones in a 64-bit mask.
pub const MAX_OPTIONS: usize = 64;
/// A bound on hostile schemas: nodes compiled and nesting followed.
const MAX_NODES: usize = 4096;
const MAX_DEPTH: usize = 64;

/// Keywords whose meaning changes the shape of valid output in a way the
/// matcher does not follow.
const UNSUPPORTED: &[&str] = &[
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependentSchemas",
    "dependentRequired",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "contains",
    "uniqueItems",
];

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Any JSON value.
    Any,
    Object(ObjectShape),
    Array {
        items: NodeId,
        min_items: u32,
        max_items: u32,
    },
    String,
    Number {
        integer: bool,
    },
    /// One of a few exact JSON texts (`enum`, `const`, `true`/`false`, `null`).
    Literals(SetId),
    /// Alternatives, told apart by the first byte of the value.
    OneOf(Vec<NodeId>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ObjectShape {
    /// The properties' names, JSON-encoded with their quotes.
    pub keys: SetId,
    /// The value shape of each property, in `keys` order.
    pub values: Vec<NodeId>,
    /// Bit `i` set: property `i` must appear.
    pub required_mask: u64,
    /// The shape of properties not listed; `None` forbids them.
    pub additional: Option<NodeId>,
}

/// A compiled schema: the nodes, the literal sets they name, the root.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonShape {
    pub nodes: Vec<Node>,
    pub literal_sets: Vec<Vec<Vec<u8>>>,
    pub root: NodeId,
    /// Per node, the bytes a value of it may start with (a 256-bit set).
    first_bytes: Vec<[u64; 4]>,
}

/// Nodes every shape has, at fixed ids, so the matcher can widen a value
/// to "any value of this kind" without searching.
pub const ANY: NodeId = 0;
pub const ANY_OBJECT: NodeId = 1;
pub const ANY_ARRAY: NodeId = 2;
pub const STRING: NodeId = 3;
pub const NUMBER: NodeId = 4;
pub const BOOLEAN: NodeId = 5;
pub const NULL: NodeId = 6;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

impl JsonShape {
    /// Any JSON object (`response_format: {"type": "json_object"}`).
    pub fn any_object() -> Self {
        let mut shape = Self::base();
        shape.root = ANY_OBJECT;
        shape.first_bytes = shape.compute_first_bytes();
        shape
    }

    /// Compiles `schema` (a JSON Schema document; its `$ref`s resolve
    /// against itself).
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        let mut compiler = Compiler {
            shape: Self::base(),
            document: schema,
            refs: HashMap::new(),
        };
        let root = compiler.node(schema, 0)?;
        compiler.shape.root = root;
        let mut shape = compiler.shape;
        shape.first_bytes = shape.compute_first_bytes();
        if shape.first_bytes.get(root as usize) == Some(&[0; 4]) {
            return Err(SchemaError(
                "the schema admits no value: its alternatives only refer to each other".into(),
            ));
        }
        Ok(shape)
    }

    fn base() -> Self {
        let literal_sets = vec![
            Vec::new(),
            vec![b"true".to_vec(), b"false".to_vec()],
            vec![b"null".to_vec()],
        ];
        let nodes = vec![
            Node::Any,
            Node::Object(ObjectShape {
                keys: 0,
                values: Vec::new(),
                required_mask: 0,
                additional: Some(ANY),
            }),
            Node::Array {
                items: ANY,
                min_items: 0,
                max_items: u32::MAX,
            },
            Node::String,
            Node::Number { integer: false },
            Node::Literals(1),
            Node::Literals(2),
        ];
        Self {
            nodes,
            literal_sets,
            root: ANY,
            first_bytes: Vec::new(),
        }
    }

    pub fn node(&self, id: NodeId) -> &Node {
        self.nodes.get(id as usize).unwrap_or(&Node::Any)
    }

    pub fn set(&self, id: SetId) -> &[Vec<u8>] {
        self.literal_sets
            .get(id as usize)
            .map_or(&[], Vec::as_slice)
    }

    /// Whether a value of node `id` may start with byte `b`.
    pub fn starts_with(&self, id: NodeId, b: u8) -> bool {
        self.first_bytes
            .get(id as usize)
            .is_some_and(|set| set[usize::from(b >> 6)] & (1 << (b & 63)) != 0)
    }

    /// Every node's first bytes, as a least fixed point: alternatives may
    /// refer to each other through `$ref` cycles, and following them
    /// recursively would take time exponential in a hostile schema's
    /// nesting. Children get lower ids than the alternatives naming them,
    /// so one pass in id order settles everything but `$ref` cycles; the
    /// passes stop at the nesting bound, and a set left short only makes
    /// the matcher refuse a start it could have taken, never accept one it
    /// should not. A cycle of alternatives with nothing else under it
    /// starts with no byte at all (no value matches it).
    fn compute_first_bytes(&self) -> Vec<[u64; 4]> {
        let add = |set: &mut [u64; 4], b: u8| set[usize::from(b >> 6)] |= 1 << (b & 63);
        let mut first = vec![[0u64; 4]; self.nodes.len()];
        for (id, node) in self.nodes.iter().enumerate() {
            let set = &mut first[id];
            match node {
                Node::Any => {
                    for b in b"{[\"-0123456789tfn" {
                        add(set, *b);
                    }
                }
                Node::Object(_) => add(set, b'{'),
                Node::Array { .. } => add(set, b'['),
                Node::String => add(set, b'"'),
                Node::Number { .. } => {
                    for b in b"-0123456789" {
                        add(set, *b);
                    }
                }
                Node::Literals(literals) => {
                    for text in self.set(*literals) {
                        if let Some(&b) = text.first() {
                            add(set, b);
                        }
                    }
                }
                Node::OneOf(_) => {}
            }
        }
        for _ in 0..=MAX_DEPTH {
            let mut changed = false;
            for (id, node) in self.nodes.iter().enumerate() {
                let Node::OneOf(alternatives) = node else {
                    continue;
                };
                let mut union = first[id];
                for &alt in alternatives {
                    if let Some(set) = first.get(alt as usize) {
                        for (u, s) in union.iter_mut().zip(set) {
                            *u |= s;
                        }
                    }
                }
                if union != first[id] {
                    first[id] = union;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        first
    }
}

struct Compiler<'a> {
    shape: JsonShape,
    document: &'a Value,
    /// `$ref` targets already compiled (or being compiled: recursion).
    refs: HashMap<String, NodeId>,
}

impl Compiler<'_> {
    fn push(&mut self, node: Node) -> Result<NodeId, SchemaError> {
        if self.shape.nodes.len() >= MAX_NODES {
            return Err(SchemaError(format!(
                "the schema is too large (more than {MAX_NODES} sub-schemas)"
            )));
        }
        self.shape.nodes.push(node);
        Ok((self.shape.nodes.len() - 1) as NodeId)
    }

    fn literals(&mut self, values: &[Value], keyword: &str) -> Result<NodeId, SchemaError> {
        if values.is_empty() || values.len() > MAX_OPTIONS {
            return Err(SchemaError(format!(
                "'{keyword}' must list between 1 and {MAX_OPTIONS} values, got {}",
                values.len()
            )));
        }
        let texts = values
            .iter()
            .map(|v| serde_json::to_vec(v).map_err(|e| SchemaError(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        self.shape.literal_sets.push(texts);
        let set = (self.shape.literal_sets.len() - 1) as SetId;
        self.push(Node::Literals(set))
    }

    fn node(&mut self, schema: &Value, depth: usize) -> Result<NodeId, SchemaError> {
        if depth > MAX_DEPTH {
            return Err(SchemaError(format!(
                "the schema nests deeper than {MAX_DEPTH} levels"
            )));
        }
        let map = match schema {
            Value::Bool(true) => return Ok(ANY),
            Value::Bool(false) => {
                return Err(SchemaError("the schema `false` admits no value".into()));
            }
            Value::Object(map) => map,
            other => {
                return Err(SchemaError(format!(
                    "a schema must be an object or a boolean, got {other}"
                )));
            }
        };
        if let Some(keyword) = UNSUPPORTED.iter().find(|k| map.contains_key(**k)) {
            return Err(SchemaError(format!(
                "the schema keyword '{keyword}' is not supported by constrained decoding"
            )));
        }
        if let Some(reference) = map.get("$ref") {
            return self.reference(reference, depth);
        }
        if let Some(value) = map.get("const") {
            return self.literals(std::slice::from_ref(value), "const");
        }
        if let Some(values) = map.get("enum") {
            let values = values
                .as_array()
                .ok_or_else(|| SchemaError("'enum' must be an array".into()))?;
            return self.literals(values, "enum");
        }
        if let Some(all) = map.get("allOf") {
            return match all.as_array().map(Vec::as_slice) {
                Some([only]) => self.node(only, depth + 1),
                _ => Err(SchemaError(
                    "'allOf' is supported with exactly one schema".into(),
                )),
            };
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(alternatives) = map.get(keyword) {
                let alternatives = alternatives
                    .as_array()
                    .filter(|a| !a.is_empty() && a.len() <= MAX_OPTIONS)
                    .ok_or_else(|| {
                        SchemaError(format!(
                            "'{keyword}' must be an array of 1 to {MAX_OPTIONS} schemas"
                        ))
                    })?;
                let mut ids = alternatives
                    .iter()
                    .map(|alt| self.node(alt, depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                ids.sort_unstable();
                ids.dedup();
                return self.push(Node::OneOf(ids));
            }
        }
        match map.get("type") {
            None => {
                if map.contains_key("properties") || map.contains_key("additionalProperties") {
                    self.typed("object", map, depth)
                } else if map.contains_key("items") {
                    self.typed("array", map, depth)
                } else {
                    Ok(ANY)
                }
            }
            Some(Value::String(ty)) => self.typed(ty, map, depth),
            Some(Value::Array(types)) => {
                let ids = types
                    .iter()
                    .map(|ty| match ty {
                        Value::String(ty) => self.typed(ty, map, depth),
                        other => Err(SchemaError(format!(
                            "'type' entries must be strings, got {other}"
                        ))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if ids.is_empty() {
                    return Err(SchemaError("'type' must not be an empty array".into()));
                }
                self.push(Node::OneOf(ids))
            }
            Some(other) => Err(SchemaError(format!(
                "'type' must be a string or an array of strings, got {other}"
            ))),
        }
    }

    fn reference(&mut self, reference: &Value, depth: usize) -> Result<NodeId, SchemaError> {
        let path = reference
            .as_str()
            .ok_or_else(|| SchemaError("'$ref' must be a string".into()))?;
        if let Some(&id) = self.refs.get(path) {
            return Ok(id);
        }
        let pointer = path.strip_prefix('#').ok_or_else(|| {
            SchemaError(format!(
                "only references inside the schema ('#/...') are supported, got '{path}'"
            ))
        })?;
        let target = self
            .document
            .pointer(pointer)
            .ok_or_else(|| SchemaError(format!("'$ref' target '{path}' does not exist")))?;
        // Reserve the id first, so a recursive reference resolves to it.
        let id = self.push(Node::Any)?;
        self.refs.insert(path.to_owned(), id);
        let compiled = self.node(target, depth + 1)?;
        let node = self.shape.node(compiled).clone();
        self.shape.nodes[id as usize] = node;
        Ok(id)
    }

    fn typed(
        &mut self,
        ty: &str,
        map: &Map<String, Value>,
        depth: usize,
    ) -> Result<NodeId, SchemaError> {
        match ty {
            "string" => Ok(STRING),
            "number" => Ok(NUMBER),
            "integer" => self.push(Node::Number { integer: true }),
            "boolean" => Ok(BOOLEAN),
            "null" => Ok(NULL),
            "object" => self.object(map, depth),
            "array" => {
                let items = match map.get("items") {
                    None => ANY,
                    Some(items) => self.node(items, depth + 1)?,
                };
                let count = |key: &str| -> Result<Option<u32>, SchemaError> {
                    match map.get(key) {
                        None => Ok(None),
                        Some(v) => v
                            .as_u64()
                            .map(|n| Some(n.min(u64::from(u32::MAX - 1)) as u32))
                            .ok_or_else(|| {
                                SchemaError(format!("'{key}' must be a non-negative integer"))
                            }),
                    }
                };
                let min_items = count("minItems")?.unwrap_or(0);
                let max_items = count("maxItems")?.unwrap_or(u32::MAX);
                if min_items > max_items {
                    return Err(SchemaError(format!(
                        "'minItems' ({min_items}) is larger than 'maxItems' ({max_items})"
                    )));
                }
                self.push(Node::Array {
                    items,
                    min_items,
                    max_items,
                })
            }
            other => Err(SchemaError(format!(
                "unknown schema type '{other}' (expected object, array, string, number, integer, boolean or null)"
            ))),
        }
    }

    fn object(&mut self, map: &Map<String, Value>, depth: usize) -> Result<NodeId, SchemaError> {
        let empty = Map::new();
        let properties = match map.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err(SchemaError("'properties' must be an object".into())),
        };
        if properties.len() > MAX_OPTIONS {
            return Err(SchemaError(format!(
                "an object may list at most {MAX_OPTIONS} properties, got {}",
                properties.len()
            )));
        }
        let mut keys = Vec::with_capacity(properties.len());
        let mut values = Vec::with_capacity(properties.len());
        for (name, schema) in properties {
            keys.push(serde_json::to_vec(name).map_err(|e| SchemaError(e.to_string()))?);
            values.push(self.node(schema, depth + 1)?);
        }
        let mut required_mask = 0u64;
        if let Some(required) = map.get("required") {
            let names = required
                .as_array()
                .ok_or_else(|| SchemaError("'required' must be an array of names".into()))?;
            for name in names {
                let index = name
                    .as_str()
                    .and_then(|name| properties.keys().position(|k| k == name))
                    .ok_or_else(|| {
                        SchemaError(format!("required property {name} is not in 'properties'"))
                    })?;
                required_mask |= 1 << index;
            }
        }
        // Without listed properties an object is open; with them, extra
        // keys are only allowed when the schema says so (a model given
        // the choice wanders off into keys nobody asked for).
        let additional = match map.get("additionalProperties") {
            None if properties.is_empty() => Some(ANY),
            None | Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(ANY),
            Some(schema) => Some(self.node(schema, depth + 1)?),
        };
        self.shape.literal_sets.push(keys);
        let keys = (self.shape.literal_sets.len() - 1) as SetId;
        self.push(Node::Object(ObjectShape {
            keys,
            values,
            required_mask,
            additional,
        }))
    }
}

// Package queueconfig parses and validates Apache YuniKorn's queue-config
// YAML (queues.yaml) into typed, immutable limits.
//
// A config is all-or-nothing: Parse returns either a fully validated
// *Config or every problem it found (as *Errors), never a partial config,
// so a bad ConfigMap version can be refused as a whole while the last good
// one stays in force.
//
// Parse is strict in the way YuniKorn is (yaml.v3 with KnownFields): every
// key of YuniKorn's config is accepted, an unknown key, a key given twice or
// a value of the wrong kind is an error. It then applies the rules of
// YuniKorn's validator (names, duplicates, wildcards, limits against their
// queue and against the same name higher up, queue resources and
// maxapplications, placement rules) and those of design.md.
//
// Where we differ from YuniKorn on purpose:
//   - Quantities are Kubernetes quantities: "0.5", "1.5Gi" and "500m" are
//     accepted (rounded up to whole base units); "vcore" and "cpu" both
//     mean Kubernetes cpu, in millicores.
//   - An empty document, or one without partitions, is an error (YuniKorn
//     loads it as a config with no partitions).
//   - A second YAML document in the same text is an error (YuniKorn reads
//     the first and ignores the rest).
//   - A limit's maxapplications lower in the tree is compared with the
//     tightest one above it, also when an ancestor in between limits only
//     resources (YuniKorn loses track of it there).
//   - Placement rules compare rule names and queue names ignoring case, and
//     treat a queue with children as a parent even without `parent: true`.
//   - Placement rule names are checked when the config loads (YuniKorn
//     checks them only when it builds the rule set, and then keeps the old
//     one): an unknown name, a tag or fixed rule without a value, and a
//     fixed rule with a full path and a parent rule are errors. The
//     primaryGroup and secondaryGroup rules of YuniKorn's configuration
//     design, which its releases lack, are accepted.
//   - Keys that load but are not acted on are reported as Notices, each
//     naming the key (notices.go).
//   - application.sort.policy ignores case and spaces around the value,
//     and any value but fifo, fair or stateaware (read as fifo, with a
//     notice) is an error; YuniKorn takes an unknown value as fifo and only
//     logs it.
package queueconfig

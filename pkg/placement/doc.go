// Package placement decides which queue a pod runs in, as Apache YuniKorn's
// placement rules do, and who may submit to it (submit and admin ACLs).
// The scheduler plugin and the simulator both call it, so a trace replays
// the scheduler's decisions.
//
// It has no Kubernetes imports: a pod is an Input (user, groups, namespace,
// labels, annotations and the queue it names). Which queues exist comes
// from the config (queueconfig) and, for queues created by rules or left
// behind by a config change, from a Queues view (ugm.Manager implements
// it).
//
// # Semantics
//
// With rules configured (the partition's placementrules: provided, user,
// tag, fixed, and primaryGroup and secondaryGroup, which name the queue
// after the user's first group or the first other group whose queue
// exists), they run in order and the first that yields a usable queue
// wins; a rule that yields a queue that is a parent, is draining, or whose
// ACLs deny the user is skipped, as in YuniKorn. No rule: the pod is refused with the outcome of
// every rule. A rule that yields an invalid queue name, a parent rule that
// yields a leaf, or a queue that cannot be created under a leaf refuses the
// pod at once (YuniKorn rejects the application).
//
// Without rules the pod's named queue is used (resolved by
// queueconfig.ResolveQueue), else the default queue; whether it exists is
// left to ugm, which says so in its own words.
//
// Submit access to a queue is the union of the submitacl and adminacl of
// the queue and all its ancestors; no ACL on the path means no access. A
// partition where no queue sets submitacl has ACL checks off (a documented
// departure from YuniKorn, which would refuse every pod).
//
// See docs/placement.md for the rules, examples and departures.
package placement

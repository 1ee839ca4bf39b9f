// Package simulator replays a trace of pod allocations, releases and config
// changes through the same ledger and User Group Manager code the scheduler
// plugin runs, and prints every decision as one JSON line. It exists so that
// quota semantics can be checked, reviewed and pinned in golden files without
// a cluster. The format is the design's "simulator contract" (design.md),
// which a second implementation must reproduce line for line.
//
// # Input
//
// The trace is JSON Lines. Every line of the input counts for line numbers
// (1-based), blank ones included. Decisions this package makes where the
// contract is silent:
//
//   - A blank line (only JSON white space: spaces, tabs, a carriage return)
//     prints nothing: it is neither an operation nor an error, and editors
//     add them freely.
//   - A line is checked as a whole before the pod's state is looked at: an
//     allocate of a live pod with a bad field is a line error, not "already
//     allocated".
//   - Unknown fields are errors ({"line":N,"error":...}): a misspelt
//     "queue" or "resources" must not silently fall back to a default.
//   - An "app" or "namespace" given as "" means the same as absent and
//     takes its default (the pod name, "default"), as the plugin skips
//     empty labels. A "user" given as "" (or only spaces) is a line error:
//     the plugin refuses user info that names no user.
//   - Pod names identify pods across the whole trace (they stand for the
//     pod UIDs the scheduler keys its ledger by); the namespace only scopes
//     the application id.
//   - A line is placed as the plugin places a pod (pkg/placement): with
//     the config's placement rules, in order, "queue" being the provided
//     queue, "namespace" and "labels" feeding tag rules (a line has no
//     annotations), and submit ACLs checked; without rules, the named
//     queue resolved as a pod's queue label (a path from root as given, a
//     bare name as root.NAME if that exists, else as the one leaf of that
//     name), else root.default, the plugin's default defaultQueue.
//   - The allow line carries "queue" when placement chose the queue: the
//     line names none, or the config has placement rules (which may put the
//     pod elsewhere than the queue it names). A named queue resolved
//     without rules is not repeated.
//   - A queue a rule created (a dynamic queue) stays while it holds a pod,
//     across config lines too, and shows in the snapshot like any queue.
//   - "resources": {} is a request for nothing but the pod itself (pods: 1);
//     "resources": null is the same as a missing "resources".
//   - A "pods" entry in "resources" is added to, not replaced by, the pod's
//     own pods: 1.
//
// # Elastic quotas and holding
//
// The ops {"op":"capacity","resources":{...}}, {"op":"shares"} and
// {"op":"time","advance":"3m"} (the contract's name; {"op":"wait",
// "duration":"3m"} is the same op under its older name), an allocate
// line's "priority", and Options.Requeue and Options.Starvation (simulate
// --requeue --starvation D) are specified in docs/simulator.md. In short:
//
//   - The capacity starts unbounded; a capacity line replaces it (parsed as
//     allocate parses resources, but no pods: 1 is added; {} makes it
//     unbounded again) and prints {"capacity":"applied"}; bad resources are
//     a line error and change nothing.
//   - The shares are recomputed (ugm's ComputeShares, then SetShares)
//     before every allocate decision and every let-in attempt, with the
//     pod being decided counted as its queue's demand, and for a shares
//     line. They bind only elastic queues, so other configs decide as
//     before.
//   - A time line moves the simulated clock on (it starts at 00:00:00)
//     and prints {"advance":"3m0s"}; a wait line does the same and
//     prints {"wait":"3m0s"}; nothing else moves it. The gang timeouts
//     they pass fire after their line.
//   - Under Options.Requeue a refused pod is held in a hold.Book, as the
//     scheduler's PreEnqueue holds it (and is demand unless its last
//     refusal was a user or group limit). A release of a live pod lets in
//     the held pods of the limits it touched (hold.Book.Released), then,
//     when it changed a runtime share, those held by a share; an applied
//     config and a capacity line let in every held pod (hold.Book.All).
//     Each pod is tried once, in the plugin's order (priority, the leaf
//     queue's application.sort.policy, age: the allocate line's position,
//     name), each admission printing its allow line; one that does not
//     fit stays held without blocking the others. A pod held longer than
//     Options.Starvation keeps its room (hold.Book.Barrier): a pod behind
//     it that would fit is held with a *hold.BehindError, and is tried
//     again when that pod is let in. An allocate naming a held pod prints
//     {"pod":"p1","error":"already pending"}; a release of one withdraws
//     it, prints "released":false and lets nothing in (but the reservation
//     of a gang it was the last pod of). The snapshot then
//     ends with "pending":[...], the held pods in trace order.
//
// # Gangs
//
// The op {"op":"gang","gang":"g1","app":"a1","min":{"cpu":"8"},"style":"Hard","timeout":"60s"}
// ("app", "namespace", "style" and "timeout" optional) declares a gang, and an allocate line's
// "gang":"g1" makes its pod one of the gang's; docs/simulator.md, "Gangs",
// specifies them. They are decided as the scheduler plugin decides a
// YuniKorn task-group gang (docs/design.md, "Gangs"), through the same ugm
// calls; in short:
//
//   - A gang is one application (its "app", default its id), and an
//     application has one gang. "min" is its whole minimum; its "pods"
//     entry, optional, is how many pods it is for (as the plugin's
//     minimum counts them); without it the minimum counts no pods. Style
//     Soft and timeout 15m (gang.DefaultTimeout) by default. A gang is declared before its
//     pods; a declaration that differs from the first is a line error.
//   - The gang's first pod reserves the whole minimum (ugm.ReserveGang)
//     and draws on it (ugm.DrawGang), printing {"gang":"g1","reserved":true}
//     before its allow line; later pods draw, and are charged at once.
//   - A minimum that does not fit refuses the pod with a *gang.HeldError
//     (the first refusal of a wait prints {"gang":"g1","reserved":false,
//     "reason":...}, with "never":true when it never can). Under
//     Options.Requeue the pod is held by the limit the minimum met and let
//     in again as other held pods; a reservation lets the gang's held pods
//     in to draw.
//   - Time (and wait) lines fire timeouts on the simulated clock: what is
//     left is released ({"gang":"g1","timedout":true}); a Hard gang short
//     of its minimum fails, its pods refused with a *gang.FailedError
//     until all are gone; otherwise its pods are ordinary pods from then
//     on. Short: some of the minimum's pods drew nothing, or, for a
//     minimum that counts no pods, the reservation still held anything.
//   - The release of a reserved gang's last pod releases its reservation
//     ({"gang":"g1","released":true}); an applied config drops every
//     reservation, as the plugin's config change does.
//
// # Output
//
// One line per non-blank trace line, in order, then one snapshot line with
// the users, groups and queues as the REST endpoints show them. Let-ins
// (Options.Requeue) and gangs add lines after or, for a gang's reserved
// line, right before the pod line they go with. Encoding is
// deterministic: struct field order fixes the key order, maps are sorted,
// and HTML characters are not escaped.
package simulator

package reclaim

import (
	"sort"

	policy "k8s.io/api/policy/v1"
)

// Node is the dry run of one node: its pods can be taken off and given
// back, and it says whether the preemptor fits it as it stands (the
// scheduler's filters, with the pods nominated to it).
type Node interface {
	Remove(*Victim) error
	Add(*Victim) error
	Fits() bool
}

// Why nothing on a node makes room, when it is not the node's filters.
const (
	NoneEligible = "no pod on the node may be preempted for this pod (only pods of queues over their share, or of lower priority in its own queue)"
	needUnmetFmt = "queue %s is at its share and the pods on the node do not free enough of it"
	treeUnmetFmt = "quota tree %s node %s is full and the pods on the node allocated there from below it do not free enough of it"
)

// NodeResult is what SelectOnNode found on one node.
type NodeResult struct {
	// Victims go, most important first.
	Victims []*Victim
	// NumViolating of them are evicted against a PodDisruptionBudget.
	NumViolating int
	// Unresolvable says why no choice of pods on the node makes room for
	// the quota ("" otherwise).
	Unresolvable string
	// NotFit: with every eligible pod taken off, the preemptor still does
	// not fit the node; the node's filters say why.
	NotFit bool
}

// SelectOnNode finds the victims on one node, as kube-scheduler's
// DefaultPreemption does but with the quota's choice: the eligible pods
// (choose) are taken off, least important first; if the preemptor fits
// then, they are given back one at a time, most important first (those
// whose eviction would violate a PodDisruptionBudget before the others,
// pods already leaving last), each kept off only when the preemptor no
// longer fits without it or the queues it needs room in would not get
// enough back.
func (s *State) SelectOnNode(pods []*Victim, pdbs []*policy.PodDisruptionBudget, node Node) (NodeResult, error) {
	chosen := s.choose(pods, pdbs)
	if len(chosen) == 0 {
		return NodeResult{Unresolvable: NoneEligible}, nil
	}
	for _, v := range chosen {
		if err := node.Remove(v); err != nil {
			return NodeResult{}, err
		}
	}
	if why := s.needUnmet(chosen, nil); why != "" {
		return NodeResult{Unresolvable: why}, nil
	}
	if !node.Fits() {
		return NodeResult{NotFit: true}, nil
	}
	sort.SliceStable(chosen, func(i, j int) bool {
		if chosen[i].Leaving != chosen[j].Leaving {
			return !chosen[i].Leaving
		}
		return lessImportant(chosen[j], chosen[i])
	})
	var violating, nonViolating []*Victim
	for _, v := range chosen {
		if v.violates {
			violating = append(violating, v)
		} else {
			nonViolating = append(nonViolating, v)
		}
	}
	var victims []*Victim
	// off: what is still taken off, victims or not yet reprieved.
	off := make(map[*Victim]bool, len(chosen))
	for _, v := range chosen {
		off[v] = true
	}
	reprieve := func(v *Victim) (bool, error) {
		// Given back only if the queues it needs room in keep enough
		// without it, and the preemptor still fits the node.
		if s.needUnmet(chosen, func(x *Victim) bool { return x != v && off[x] }) != "" {
			victims = append(victims, v)
			return false, nil
		}
		if err := node.Add(v); err != nil {
			return false, err
		}
		if node.Fits() {
			delete(off, v)
			return true, nil
		}
		if err := node.Remove(v); err != nil {
			return false, err
		}
		victims = append(victims, v)
		return false, nil
	}
	numViolating := 0
	for _, v := range violating {
		fits, err := reprieve(v)
		if err != nil {
			return NodeResult{}, err
		}
		if !fits {
			numViolating++
		}
	}
	for _, v := range nonViolating {
		if _, err := reprieve(v); err != nil {
			return NodeResult{}, err
		}
	}
	sort.SliceStable(victims, func(i, j int) bool { return lessImportant(victims[j], victims[i]) })
	return NodeResult{Victims: victims, NumViolating: numViolating}, nil
}

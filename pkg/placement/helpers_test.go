package placement

// fakeQueues is a Queues view: path -> "leaf", "parent" or "draining".
type fakeQueues map[string]string

func (f fakeQueues) DynamicQueue(path string) (exists, leaf, draining bool) {
	switch f[path] {
	case "leaf":
		return true, true, false
	case "parent":
		return true, false, false
	case "draining":
		return true, true, true
	}
	return false, false, false
}

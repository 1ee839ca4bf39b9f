package resources

import "strings"

// MetricUnit is how an amount of id in base units reads in Prometheus base
// units (and in the resource-seconds report): divide by per; unit names
// the result, as kube-state-metrics does. cpu is in cores (per 1000:
// base units are millicores), memory, ephemeral storage and huge pages in
// bytes, everything else as a count.
func MetricUnit(id ID) (per float64, unit string) {
	switch name := id.Name(); {
	case name == CPU:
		return 1000, "core"
	case name == Memory || name == "ephemeral-storage" || strings.HasPrefix(name, "hugepages-"):
		return 1, "byte"
	default:
		return 1, "integer"
	}
}

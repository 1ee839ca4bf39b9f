package queueconfig

import (
	"fmt"
	"strings"
)

// Load is the whole validation of a queue config for a scheduler that
// enforces partition: Parse, and the partition must be in the config. The
// scheduler puts in force only what Load accepts, and the config webhook
// admits only that, so a config the webhook lets in is one the scheduler
// loads (docs/design.md, "Config"). It returns the config and nil, or nil
// and an *Errors listing every problem.
func Load(data []byte, partition string) (*Config, error) {
	cfg, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if cfg.Partition(partition) == nil {
		names := make([]string, 0, len(cfg.Partitions))
		for _, p := range cfg.Partitions {
			names = append(names, fmt.Sprintf("%q", p.Name))
		}
		has := "none"
		if len(names) > 0 {
			has = strings.Join(names, ", ")
		}
		return nil, &Errors{List: []Error{{Path: "partitions",
			Msg: fmt.Sprintf("no partition %q, the partition the scheduler enforces (its partition argument); the config has %s", partition, has)}}}
	}
	return cfg, nil
}

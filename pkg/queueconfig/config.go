package queueconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Parse parses and validates a YuniKorn queue config. It returns the config
// and nil, or nil and an *Errors listing every problem in document order.
// It never panics, whatever the input.
func Parse(data []byte) (cfg *Config, err error) {
	errs := &errorList{}
	defer func() {
		// Last line of defence: a bug must refuse the config, not crash the
		// scheduler that is reloading it.
		if r := recover(); r != nil {
			errs.add(0, "", "internal error while parsing the config: %v", r)
			cfg, err = nil, errs.result()
		}
	}()

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if e := dec.Decode(&doc); e != nil && !errors.Is(e, io.EOF) {
		addYAMLError(errs, e)
		return nil, errs.result()
	}
	var next yaml.Node
	switch e := dec.Decode(&next); {
	case e == nil:
		if len(next.Content) > 0 && !(len(next.Content) == 1 && isNull(next.Content[0])) {
			errs.add(next.Line, "", "a second YAML document starts here: a queue config is one document")
		}
	case !errors.Is(e, io.EOF):
		addYAMLError(errs, e)
	}

	w := newWalker(errs, &doc)
	rc := &rawConfig{}
	if doc.Kind != 0 {
		rc = w.walkDocument(&doc)
	}
	if w.budgetHit {
		// The tree was cut short: validating it would only add noise.
		return nil, errs.result()
	}
	v := &validator{errs: errs}
	var parts []*partBuild
	if rc != nil {
		v.validatePartitions(rc)
		for _, rp := range rc.partitions {
			pb := buildPartition(rp)
			v.validatePartition(pb)
			parts = append(parts, pb)
		}
	}
	if !errs.empty() {
		return nil, errs.result()
	}

	sum := sha256.Sum256(data)
	cfg = &Config{Checksum: hex.EncodeToString(sum[:]), Notices: collectNotices(rc)}
	for _, pb := range parts {
		pb.finish()
		cfg.Partitions = append(cfg.Partitions, pb.part)
	}
	return cfg, nil
}

// yamlLineRE finds the line in a yaml.v3 syntax error.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// addYAMLError records a YAML syntax error with its line when it has one.
func addYAMLError(errs *errorList, e error) {
	msg := e.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		errs.add(line, "", "invalid YAML: %s", m[2])
		return
	}
	errs.add(0, "", "invalid YAML: %s", msg)
}

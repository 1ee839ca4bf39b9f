package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, o *options)
	}{
		{name: "no TLS", args: nil, wantErr: "--tls-cert-file and --tls-key-file are required"},
		{name: "bad trusted user", args: []string{"--tls-cert-file=c", "--tls-key-file=k", "--trusted-users=("}, wantErr: "--trusted-users: pattern"},
		{name: "bad quota groups", args: []string{"--tls-cert-file=c", "--tls-key-file=k", "--quota-groups=("}, wantErr: "--quota-groups"},
		{name: "bad config map", args: []string{"--tls-cert-file=c", "--tls-key-file=k", "--config-map=x"}, wantErr: "want namespace/name"},
		{name: "defaults", args: []string{"--tls-cert-file=c", "--tls-key-file=k"}, check: func(t *testing.T, o *options) {
			if len(o.trustedUsers) != 2 || o.schedulerName != "userquota-scheduler" || o.listen != ":8443" || o.partition != "default" {
				t.Errorf("options = %+v", o)
			}
		}},
		{name: "partition", args: []string{"--tls-cert-file=c", "--tls-key-file=k", "--partition=gpu"}, check: func(t *testing.T, o *options) {
			if o.partition != "gpu" {
				t.Errorf("partition = %q, want gpu", o.partition)
			}
		}},
		{name: "lists", args: []string{"--tls-cert-file=c", "--tls-key-file=k", "--submitters=a,b", "--submitters=c"}, check: func(t *testing.T, o *options) {
			if strings.Join(o.submitters, " ") != "a b c" {
				t.Errorf("submitters = %v", o.submitters)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _, err := parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o)
		})
	}
}

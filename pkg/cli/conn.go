package cli

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// registerConn adds the flags that reach the scheduler's REST API, shared
// by usage, usage report, why and held: --server (default
// $USERQUOTA_SERVER), --partition, the token and TLS flags, --timeout.
func (f *usageFlags) registerConn(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", os.Getenv(envServer), "")
	fs.StringVar(&f.partition, "partition", "default", "")
	fs.StringVar(&f.token, "token", "", "")
	fs.StringVar(&f.tokenFile, "token-file", "", "")
	fs.StringVar(&f.caFile, "ca-file", "", "")
	fs.BoolVar(&f.insecure, "insecure-skip-tls-verify", false, "")
	fs.StringVar(&f.serverName, "tls-server-name", "", "")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "")
}

// checkConn returns what is wrong with the connection flags of cmd, ""
// when nothing; on success f.base is the server's URL.
func (f *usageFlags) checkConn(cmd string) string {
	switch {
	case f.server == "":
		return cmd + ": missing --server (or $" + envServer + "): the scheduler's REST API, e.g. https://127.0.0.1:9089"
	case f.partition == "":
		return cmd + ": --partition must not be empty"
	case f.token != "" && f.tokenFile != "":
		return cmd + ": --token and --token-file exclude each other"
	}
	base, err := url.Parse(strings.TrimSuffix(f.server, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return fmt.Sprintf("%s: --server must be an http:// or https:// URL, not %q", cmd, f.server)
	}
	f.base = base
	return ""
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memrl/memrl/internal/cliflag"
	"github.com/memrl/memrl/server"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestServeFlagsPassword(t *testing.T) {
	dir := t.TempDir()
	passFile := filepath.Join(dir, "pass")
	os.WriteFile(passFile, []byte("from-file\nignored\n"), 0o600)
	usersFile := filepath.Join(dir, "users")
	os.WriteFile(usersFile, []byte("# agents\nreader:r:p:readonly\n\nwriter:w:readwrite\n"), 0o600)
	noEnv := envOf(nil)

	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		users []server.User
		err   string
	}{
		{"none", nil, nil, nil, ""},
		{"flag", []string{"--requirepass", "p1"}, nil, []server.User{{Name: "default", Password: "p1"}}, ""},
		{"file", []string{"--requirepass-file", passFile}, nil, []server.User{{Name: "default", Password: "from-file"}}, ""},
		{"env", nil, map[string]string{passwordEnv: "p2"}, []server.User{{Name: "default", Password: "p2"}}, ""},
		{"flag over env", []string{"--requirepass", "p1"}, map[string]string{passwordEnv: "p2"}, []server.User{{Name: "default", Password: "p1"}}, ""},
		{"empty env", nil, map[string]string{passwordEnv: ""}, nil, "is set but empty"},
		{"flag and file", []string{"--requirepass", "p1", "--requirepass-file", passFile}, nil, nil, "not both"},
		{"missing file", []string{"--requirepass-file", filepath.Join(dir, "nope")}, nil, nil, "password file"},
		{"users", []string{"--user", "a:pw:readonly", "--users-file", usersFile}, nil, []server.User{
			{Name: "a", Password: "pw", ReadOnly: true}, {Name: "reader", Password: "r:p", ReadOnly: true}, {Name: "writer", Password: "w"}}, ""},
		{"bad user", []string{"--user", "a:pw:root"}, nil, nil, "readonly or readwrite"},
	} {
		env := noEnv
		if tc.env != nil {
			env = envOf(tc.env)
		}
		o, err := parseServeFlags(tc.args, env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(o.cfg.Users) != len(tc.users) {
			t.Errorf("%s: users %+v, want %+v", tc.name, o.cfg.Users, tc.users)
			continue
		}
		for i := range tc.users {
			if o.cfg.Users[i] != tc.users[i] {
				t.Errorf("%s: user %d = %+v, want %+v", tc.name, i, o.cfg.Users[i], tc.users[i])
			}
		}
		if o.passwordOnCommandLine != (tc.name == "flag" || tc.name == "flag over env") {
			t.Errorf("%s: passwordOnCommandLine = %v", tc.name, o.passwordOnCommandLine)
		}
	}
}

func TestServeFlagsProtectedMode(t *testing.T) {
	for _, tc := range []struct {
		args    string
		env     map[string]string
		refused bool
	}{
		{"--addr 0.0.0.0:6390", nil, true},
		{"--addr :6390", nil, true},
		{"--addr [::]:6390", nil, true},
		{"--addr 192.0.2.10:6390", nil, true},
		{"--addr 127.0.0.1:6390", nil, false},
		{"--addr [::1]:6390", nil, false},
		{"--addr localhost:6390", nil, false},
		{"--addr 0.0.0.0:6390 --protected-mode no", nil, false},
		{"--addr 0.0.0.0:6390", map[string]string{passwordEnv: "pw"}, false},
		{"--addr 0.0.0.0:6390 --user a:b:readonly", nil, false},
	} {
		_, err := parseServeFlags(strings.Fields(tc.args), envOf(tc.env))
		if tc.refused != (err != nil) {
			t.Errorf("%s (env %v): err %v, refused want %v", tc.args, tc.env, err, tc.refused)
		}
		if err != nil && (!cliflag.IsUsage(err) || !strings.Contains(err.Error(), "--protected-mode no")) {
			t.Errorf("%s: %v is not a usage error saying how to fix it", tc.args, err)
		}
	}
	if _, err := parseServeFlags([]string{"--protected-mode", "maybe"}, envOf(nil)); err == nil {
		t.Error("--protected-mode maybe accepted")
	}
}

func TestServeFlagsLimits(t *testing.T) {
	o, err := parseServeFlags(strings.Fields("--maxclients 7 --timeout 5m --frame-timeout 3s --maxmemory 2gb --client-query-buffer-limit 64mb --proto-max-bulk-len 512kb --max-reply-bytes -1"), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if c.MaxClients != 7 || c.IdleTimeout.Minutes() != 5 || c.FrameTimeout.Seconds() != 3 || c.MaxMemory != 2<<30 ||
		c.Limits.MaxCommandLen != 64<<20 || c.Limits.MaxBulkLen != 512<<10 || c.MaxReplyBytes != -1 {
		t.Fatalf("config %+v", c)
	}
	for _, bad := range []string{"--maxmemory lots", "--maxmemory 1tb", "--timeout 5"} {
		if _, err := parseServeFlags(strings.Fields(bad), envOf(nil)); !cliflag.IsUsage(err) {
			t.Errorf("%s: %v, want a usage error", bad, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "64kb": 64 << 10, "1MB": 1 << 20, "3gb": 3 << 30, "2g": 2 << 30, "-1": -1, "5b": 5} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "kb", "1.5gb", "99999999999gb", "ten"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
	if formatSize(1<<30) != "1gb" || formatSize(256<<20) != "256mb" || formatSize(1000) != "1000" {
		t.Error("formatSize")
	}
}

func TestServeFlagsDuplicateUserBeforeOpen(t *testing.T) {
	_, err := parseServeFlags(strings.Fields("--requirepass a --user default:b:readonly"), envOf(nil))
	if !cliflag.IsUsage(err) || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a user given twice: %v, want a usage error", err)
	}
}

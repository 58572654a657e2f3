package cluster

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// Auth.Do sends AUTH [user] password before the command, in one write,
// and a refused AUTH is the error (but for a node without passwords); the
// zero Auth sends none.
func TestAuthDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					v, err := readReply(r, 0) // a command is an array of bulk strings
					if err != nil {
						return
					}
					var args []string
					for _, a := range v.([]any) {
						args = append(args, a.(string))
					}
					got <- args
					switch {
					case args[0] == "AUTH" && args[len(args)-1] == "nopass-node":
						c.Write([]byte("-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"))
					case args[0] == "AUTH" && args[len(args)-1] != "right":
						c.Write([]byte("-WRONGPASS invalid username-password pair\r\n"))
					case args[0] == "AUTH":
						c.Write([]byte("+OK\r\n"))
					default:
						c.Write([]byte("*1\r\n$6\r\nmaster\r\n"))
					}
				}
			}()
		}
	}()
	ctx := context.Background()
	addr := ln.Addr().String()
	for _, tc := range []struct {
		auth Auth
		want []string
	}{
		{Auth{}, []string{"ROLE"}},
		{Auth{Password: "right"}, []string{"AUTH right", "ROLE"}},
		{Auth{User: "ops", Password: "right"}, []string{"AUTH ops right", "ROLE"}},
		// A node without passwords: the command runs anyway.
		{Auth{Password: "nopass-node"}, []string{"AUTH nopass-node", "ROLE"}},
	} {
		v, err := tc.auth.Do(ctx, addr, 2*time.Second, "ROLE")
		if err != nil || v.([]any)[0] != "master" {
			t.Fatalf("%+v: %v %v", tc.auth, v, err)
		}
		for _, w := range tc.want {
			if args := <-got; strings.Join(args, " ") != w {
				t.Fatalf("%+v: server read %q, want %q", tc.auth, args, w)
			}
		}
	}
	_, err = Auth{Password: "wrong"}.Do(ctx, addr, 2*time.Second, "ROLE")
	var re RedisError
	if !errors.As(err, &re) || !strings.HasPrefix(string(re), "WRONGPASS") || !strings.Contains(err.Error(), "AUTH to "+addr) {
		t.Fatalf("wrong password: %v", err)
	}
}

package client_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/client"
)

// TestPrunePolicy: SetPrunePolicy sends MEM.CONFIG … SET PRUNE, PrunePolicy
// reads back what was set (nil when none), PrunePolicyOff removes it, and a
// refused policy leaves the one in force; the pipeline forms queue the same.
func TestPrunePolicy(t *testing.T) {
	c := newClient(t, "")
	name := filterPool(t, c)
	if p, err := c.PrunePolicy(ctx, name); err != nil || p != nil {
		t.Fatalf("PrunePolicy with none = %+v, %v", p, err)
	}
	want := client.PrunePolicy{PruneOptions: client.PruneOptions{QBelow: ptr(0.25), MinVisits: 2,
		Older: time.Hour, Idle: 90 * time.Second, MaxCount: ptr(int64(100)), Filter: `.user == "u1"`}, Every: 5 * time.Minute}
	if err := c.SetPrunePolicy(ctx, name, want); err != nil {
		t.Fatal(err)
	}
	got, err := c.PrunePolicy(ctx, name)
	if err != nil || got == nil {
		t.Fatalf("PrunePolicy = %+v, %v", got, err)
	}
	want.Filter = `(.user == "u1")` // the server keeps the canonical form
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("PrunePolicy = %+v, want %+v", *got, want)
	}
	if in, err := c.Info(ctx, name); err != nil || !strings.HasPrefix(in.PrunePolicy, "QBELOW 0.25 ") {
		t.Fatalf("Info's PrunePolicy = %q, %v", in.PrunePolicy, err)
	}
	// Every 0: the server's default, 60 s.
	if err := c.SetPrunePolicy(ctx, name, client.PrunePolicy{PruneOptions: client.PruneOptions{MaxCount: ptr(int64(3))}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.PrunePolicy(ctx, name); got == nil || got.Every != time.Minute || *got.MaxCount != 3 {
		t.Fatalf("default Every: %+v", got)
	}
	// Refused: no criterion, DryRun, a bad value; the policy stays.
	for _, bad := range []client.PrunePolicy{
		{Every: time.Minute},
		{PruneOptions: client.PruneOptions{MaxCount: ptr(int64(1)), DryRun: true}},
		{PruneOptions: client.PruneOptions{MaxCount: ptr(int64(-1))}},
		{PruneOptions: client.PruneOptions{MaxCount: ptr(int64(1)), Filter: "(("}},
	} {
		var ce *client.Error
		if err := c.SetPrunePolicy(ctx, name, bad); !errors.As(err, &ce) {
			t.Fatalf("SetPrunePolicy(%+v) = %v, want a server error", bad, err)
		}
	}
	if got, _ := c.PrunePolicy(ctx, name); got == nil || *got.MaxCount != 3 {
		t.Fatalf("a refused policy changed it: %+v", got)
	}
	if err := c.SetPrunePolicy(ctx, "nope", want); !errors.Is(err, client.ErrNoCollection) {
		t.Fatalf("unknown collection: %v", err)
	}
	// Pipelined.
	p := c.Pipeline()
	off := p.PrunePolicyOff(ctx, name)
	after := p.PrunePolicy(ctx, name)
	set := p.SetPrunePolicy(ctx, name, client.PrunePolicy{PruneOptions: client.PruneOptions{QBelow: ptr(-1.0)}, Every: 2 * time.Second})
	again := p.PrunePolicy(ctx, name)
	if err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := off.Result(); err != nil {
		t.Fatal(err)
	}
	if v, err := after.Result(); err != nil || v != nil {
		t.Fatalf("after OFF: %+v, %v", v, err)
	}
	if _, err := set.Result(); err != nil {
		t.Fatal(err)
	}
	if v, err := again.Result(); err != nil || v == nil || *v.QBelow != -1 || v.Every != 2*time.Second {
		t.Fatalf("pipelined set: %+v, %v", v, err)
	}
}

package main

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"github.com/memrl/memrl/server"
)

func TestHeapLimit(t *testing.T) {
	const gib = 1 << 30
	// 3 GiB live of which 1 GiB client buffers: the rest (2 GiB) plus
	// 1.25 × maxmemory and the slack.
	if got, want := heapLimit(3*gib, gib, gib), int64(2*gib+gib+gib/4+heapSlack); got != want {
		t.Fatalf("heapLimit = %d, want %d", got, want)
	}
	// Client bytes counted after the live figure was taken can exceed it.
	if got := heapLimit(100, 200, gib); got != gib+gib/4+heapSlack {
		t.Fatalf("heapLimit with more client bytes than live = %d", got)
	}
}

// TestGovernHeapSetsAndRestoresTheLimit: the governor sets a finite soft
// memory limit while it runs and puts back the one it found.
func TestGovernHeapSetsAndRestoresTheLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	s, err := server.New(server.Config{MaxMemory: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { governHeap(ctx, s.ClientMemory(), 1<<30, nil); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for debug.SetMemoryLimit(-1) == before {
		if time.Now().After(deadline) {
			t.Fatal("the governor set no memory limit")
		}
		time.Sleep(time.Millisecond)
	}
	if lim := debug.SetMemoryLimit(-1); lim < 1<<30 || lim > 1<<40 {
		t.Fatalf("limit %d", lim)
	}
	cancel()
	<-done
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("limit after the governor stopped = %d, want %d", got, before)
	}
}

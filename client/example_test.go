package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/memrl/memrl/client"
)

// serverAddr is the address of a memrl server (`memrl serve`); in these
// examples, one that TestMain started in-process.
func serverAddr() string { return testAddr }

// A learning loop: store experiences, retrieve by similarity and learned
// utility, reward what helped.
func Example() {
	ctx := context.Background()
	c, err := client.New(client.Options{Addr: serverAddr()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.Create(ctx, "ex_plans", 2, nil); err != nil {
		log.Fatal(err)
	}
	// Two recipes: one closer to the task, one that worked before.
	near, _ := c.Add(ctx, "ex_plans", []float32{0.9, 0.436}, &client.AddOptions{Payload: []byte("close")})
	useful, _ := c.Add(ctx, "ex_plans", []float32{0.6, 0.8}, &client.AddOptions{Payload: []byte("useful")})

	// The agent tried both: the close one failed, the other succeeded.
	c.Reward(ctx, "ex_plans", 0, client.ID(near))
	qs, _ := c.Reward(ctx, "ex_plans", 1, client.ID(useful))
	fmt.Printf("Q of the useful recipe: %.2f\n", qs[0])

	// λ = 0 ranks by similarity alone; λ = 1 by learned Q.
	for _, lambda := range []float64{0, 1} {
		rs, err := c.Retrieve(ctx, "ex_plans", []float32{1, 0}, &client.RetrieveOptions{Lambda: &lambda, WithPayload: true})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("λ=%v: best %s (sim %.2f, Q %.2f)\n", lambda, rs[0].Payload, rs[0].Sim, rs[0].Q)
	}
	// Output:
	// Q of the useful recipe: 0.30
	// λ=0: best close (sim 0.90, Q 0.00)
	// λ=1: best useful (sim 0.60, Q 0.30)
}

// Attributes, keys and expiry: name a memory by its own id (a task id),
// tag it, and read it back.
func ExampleClient_Get() {
	ctx := context.Background()
	c, _ := client.New(client.Options{Addr: serverAddr()})
	defer c.Close()
	c.Create(ctx, "ex_tasks", 2, nil)

	_, err := c.Add(ctx, "ex_tasks", []float32{1, 0}, &client.AddOptions{
		Key:   "task-9",
		Attrs: map[string]any{"user": "u7", "step": 3},
	})
	if err != nil {
		log.Fatal(err)
	}
	m, err := c.Get(ctx, "ex_tasks", client.Key("task-9"), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.ID, m.Key, m.Attrs["user"], m.Attrs["step"], m.Expires.IsZero())
	// Output: 1 task-9 u7 3 true
}

// Typed errors: test the rule with errors.Is, read the reply with
// errors.As.
func ExampleError() {
	ctx := context.Background()
	c, _ := client.New(client.Options{Addr: serverAddr()})
	defer c.Close()
	c.Create(ctx, "ex_errors", 2, nil)
	c.Add(ctx, "ex_errors", []float32{1, 0}, &client.AddOptions{Key: "task-1"})

	// A retried add with the same key is refused, not stored twice.
	_, err := c.Add(ctx, "ex_errors", []float32{1, 0}, &client.AddOptions{Key: "task-1"})
	fmt.Println(errors.Is(err, client.ErrKeyExists))

	_, err = c.Add(ctx, "ex_errors", []float32{1, 0, 0}, nil)
	var e *client.Error
	if errors.As(err, &e) && errors.Is(err, client.ErrDimension) {
		fmt.Println(e.Code, e.Msg)
	}
	// Output:
	// true
	// ERR vector dimension does not match the collection: got 3, collection "ex_errors" has 2
}

// Pipelines send many commands in one round trip; read each result after
// Exec.
func ExampleClient_Pipeline() {
	ctx := context.Background()
	c, _ := client.New(client.Options{Addr: serverAddr()})
	defer c.Close()
	c.Create(ctx, "ex_pipe", 2, nil)

	p := c.Pipeline()
	var ids []*client.Cmd[int64]
	for _, v := range [][]float32{{1, 0}, {0, 1}, {1, 1}} {
		ids = append(ids, p.Add(ctx, "ex_pipe", v, nil))
	}
	count := p.Info(ctx, "ex_pipe")
	if err := p.Exec(ctx); err != nil {
		log.Fatal(err)
	}
	for _, id := range ids {
		fmt.Print(id.Val(), " ")
	}
	fmt.Println(count.Val().Count)
	// Output: 1 2 3 3
}

// A transaction: replace the memory stored under a key in one step.
func ExampleClient_TxPipelined() {
	ctx := context.Background()
	c, _ := client.New(client.Options{Addr: serverAddr()})
	defer c.Close()
	c.Create(ctx, "ex_tx", 2, nil)
	c.Add(ctx, "ex_tx", []float32{1, 0}, &client.AddOptions{Key: "task-9", Payload: []byte("v1")})

	var add *client.Cmd[int64]
	err := c.TxPipelined(ctx, func(p *client.Pipeline) error {
		p.Del(ctx, "ex_tx", client.Key("task-9"))
		add = p.Add(ctx, "ex_tx", []float32{0, 1}, &client.AddOptions{Key: "task-9", Payload: []byte("v2")})
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	m, _ := c.Get(ctx, "ex_tx", client.Key("task-9"), nil)
	fmt.Println(add.Val(), string(m.Payload))
	// Output: 2 v2
}

// Rewarding several memories at once, by id and by key: all or nothing.
func ExampleClient_Reward() {
	ctx := context.Background()
	c, _ := client.New(client.Options{Addr: serverAddr()})
	defer c.Close()
	alpha := 0.5
	c.Create(ctx, "ex_reward", 2, &client.CreateOptions{Alpha: &alpha})
	a, _ := c.Add(ctx, "ex_reward", []float32{1, 0}, nil)
	c.Add(ctx, "ex_reward", []float32{0, 1}, &client.AddOptions{Key: "b"})

	qs, _ := c.Reward(ctx, "ex_reward", 1, client.ID(a), client.Key("b"))
	fmt.Println(qs)
	_, err := c.Reward(ctx, "ex_reward", 1, client.ID(a), client.ID(42))
	fmt.Println(errors.Is(err, client.ErrNoMemory))
	m, _ := c.Get(ctx, "ex_reward", client.ID(a), nil)
	fmt.Println(m.Q, m.Visits) // unchanged by the failed reward
	// Output:
	// [0.5 0.5]
	// true
	// 0.5 1
}

// Loading many memories in one command, then reading them all back page
// by page.
func ExampleClient_ScanAll() {
	ctx := context.Background()
	c, _ := client.New(client.Options{Addr: serverAddr()})
	defer c.Close()
	c.Create(ctx, "ex_scan", 2, &client.CreateOptions{Metric: client.L2})

	var batch []client.AddItem
	for i := range 5 {
		batch = append(batch, client.AddItem{
			Vector:     []float32{float32(i), 1},
			AddOptions: client.AddOptions{Key: fmt.Sprintf("doc-%d", i)},
		})
	}
	ids, err := c.MAdd(ctx, "ex_scan", batch)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids)

	for m, err := range c.ScanAll(ctx, "ex_scan", &client.ScanOptions{Count: 2, WithVector: true}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(m.ID, m.Key, m.Vector)
	}
	// Output:
	// [1 2 3 4 5]
	// 1 doc-0 [0 1]
	// 2 doc-1 [1 1]
	// 3 doc-2 [2 1]
	// 4 doc-3 [3 1]
	// 5 doc-4 [4 1]
}

// Retrieval within one tenant: the filter narrows phase 1 itself, so each
// user gets their own nearest memories. Indexing the field makes the
// filter a bitmap lookup.
func ExampleClient_Retrieve() {
	ctx := context.Background()
	c, _ := client.New(client.Options{Addr: serverAddr()})
	defer c.Close()
	c.Create(ctx, "ex_tenants", 2, &client.CreateOptions{Indexed: []string{"user"}})
	for i, user := range []string{"u1", "u2", "u1", "u2"} {
		c.Add(ctx, "ex_tenants", []float32{1, float32(i)}, &client.AddOptions{
			Payload: []byte(fmt.Sprintf("%s's plan %d", user, i)),
			Attrs:   map[string]any{"user": user, "step": i},
		})
	}
	lambda := 0.0
	rs, err := c.Retrieve(ctx, "ex_tenants", []float32{1, 0}, &client.RetrieveOptions{
		Lambda: &lambda, Filter: `.user == "u2"`, WithPayload: true, WithAttrs: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rs {
		fmt.Printf("%d %s step %v\n", r.ID, r.Payload, r.Attrs["step"])
	}
	n, _ := c.CountFilter(ctx, "ex_tenants", `.user == "u1" and .step > 0`)
	fmt.Println(n)
	// Output:
	// 2 u2's plan 1 step 1
	// 4 u2's plan 3 step 3
	// 1
}

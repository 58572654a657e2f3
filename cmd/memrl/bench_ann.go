package main

import "fmt"

// benchANN is wired to bench/ann once that package lands.
func benchANN(args []string) error { return fmt.Errorf("bench ann: not built yet") }

package linearize

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestMemModelCatchesStaleRead: the model refuses a read that misses an
// acknowledged reward, and accepts a reward of unknown outcome as applied
// or not.
func TestMemModelCatchesStaleRead(t *testing.T) {
	stale := []porcupine.Operation{
		{ClientId: 0, Input: Input{ID: 1, R: 5}, Call: 0, Output: Output{Q: 5}, Return: 10},
		{ClientId: 1, Input: Input{Read: true, ID: 1}, Call: 20, Output: Output{}, Return: 30},
	}
	if porcupine.CheckOperations(MemModel, stale) {
		t.Fatal("a stale read was accepted")
	}
	unknown := []porcupine.Operation{
		{ClientId: 0, Input: Input{ID: 1, R: 5}, Call: 0, Output: Output{Unknown: true}, Return: Never},
		{ClientId: 1, Input: Input{Read: true, ID: 1}, Call: 20, Output: Output{}, Return: 30},
		{ClientId: 1, Input: Input{Read: true, ID: 1}, Call: 40, Output: Output{Q: 5, Visits: 1}, Return: 50},
	}
	if !porcupine.CheckOperations(MemModel, unknown) {
		t.Fatal("a reward of unknown outcome seen late was refused")
	}
	double := []porcupine.Operation{
		{ClientId: 0, Input: Input{ID: 1, R: 5}, Call: 0, Output: Output{Q: 5}, Return: 10},
		{ClientId: 1, Input: Input{Read: true, ID: 1}, Call: 20, Output: Output{Q: 5, Visits: 2}, Return: 30},
	}
	if porcupine.CheckOperations(MemModel, double) {
		t.Fatal("a reward applied twice was accepted")
	}
}

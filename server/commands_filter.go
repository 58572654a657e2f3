package server

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/engine/filter"
)

// Filters (docs/PROTOCOL.md "Filters"): the FILTER option of MEM.RETRIEVE,
// MEM.SCAN and MEM.COUNT, MEM.DEL coll FILTER expr, the INDEXED option of
// MEM.CREATE, and MEM.INDEX. The expression language and its errors are
// package engine/filter's; an expression that does not parse (or cannot
// match whatever the attributes) is an ERR naming the column, before
// anything is read or changed.

func (m memCommands) registerFilter(s *Server) {
	s.Register("MEM.INDEX", 2, m.index)
}

// filterExpr parses the argument after FILTER.
func (a *argList) filterExpr() (*filter.Expr, error) {
	b, err := a.next("FILTER")
	if err != nil {
		return nil, err
	}
	return filter.Parse(string(b))
}

// indexedFields parses the argument after INDEXED: field names separated
// by commas ("user,session,tags").
func (a *argList) indexedFields() ([]string, error) {
	b, err := a.next("INDEXED")
	if err != nil {
		return nil, err
	}
	var fields []string
	for _, f := range strings.Split(string(b), ",") {
		if f = strings.TrimSpace(f); f != "" {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("syntax error: INDEXED needs field names separated by commas")
	}
	return fields, nil
}

// MEM.INDEX coll (ADD field | DROP field | LIST)
//
// ADD starts indexing an attribute field (building its bitmaps from every
// memory now, under the collection's write lock), DROP stops; both reply
// OK, and change nothing when the field already is (or is not) indexed.
// LIST replies the indexed fields, sorted.
func (m memCommands) index(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	switch op := strings.ToUpper(string(args[1])); {
	case op == "LIST" && len(args) == 2:
		fields, err := coll.IndexedFields()
		if err != nil {
			return err
		}
		c.WriteArrayHeader(len(fields))
		for _, f := range fields {
			c.WriteBulkString(f)
		}
		return nil
	case (op == "ADD" || op == "DROP") && len(args) == 3:
		if err := coll.IndexField(string(args[2]), op == "ADD"); err != nil {
			return err
		}
		c.WriteOK()
		return nil
	case op == "LIST" || op == "ADD" || op == "DROP":
		return c.WrongArity()
	default:
		return fmt.Errorf("syntax error: MEM.INDEX takes ADD field, DROP field or LIST, not %q", args[1])
	}
}

// isFilterDel reports whether MEM.DEL's arguments after coll are FILTER
// expr (ids are numbers and keys follow KEY, so FILTER is unambiguous).
func isFilterDel(args [][]byte) bool {
	return len(args) >= 2 && bytes.EqualFold(args[1], []byte("FILTER"))
}

// delFilter is MEM.DEL coll FILTER expr: deletes every memory whose
// attributes match; replies how many.
func (m memCommands) delFilter(c *Ctx, coll *engine.Collection, args [][]byte) error {
	if len(args) != 3 {
		return c.WrongArity()
	}
	a := argList{args: args, i: 2}
	e, err := filter.Parse(string(a.args[a.i]))
	if err != nil {
		return err
	}
	n, ticket, err := coll.DeleteFilterContext(c.Context(), e)
	if err != nil {
		return err
	}
	if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
		return err
	}
	c.WriteInt(int64(n))
	return nil
}

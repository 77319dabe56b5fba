package store

// CheckText is one CHECK constraint migration 0012 rewrites, as text.
type CheckText struct{ Table, List, Chain string }

// ListChecks returns the constraints migration 0012 rewrites, before and
// after.
func ListChecks() []CheckText {
	out := make([]CheckText, len(listChecks))
	for i, c := range listChecks {
		out[i] = CheckText{Table: c.table, List: c.list(), Chain: c.chain()}
	}
	return out
}

// OutboxSQL is the statement PendingOutbox reads the outbox with, given the
// relays it skips and the tasks that wait.
func OutboxSQL(skip, waiting []string) string {
	q, _, err := outboxQuery(skip, waiting, 64)
	if err != nil {
		panic(err)
	}
	return q
}

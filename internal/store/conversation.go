package store

import (
	"context"
	"database/sql"
	"fmt"
)

// backfillConversations gives tasks written without a conversation (before
// migration 0007, or copied from the upstream relay) the conversation of
// the first task of their parent chain, and hops equal to their depth. A
// task without a parent keeps conversation_id NULL: it started its own.
const backfillConversations = `
UPDATE tasks SET hops = depth WHERE conversation_id IS NULL AND hops < depth;
WITH RECURSIVE chain(id, root) AS (
    SELECT id, id FROM tasks WHERE parent_task_id IS NULL
    UNION
    SELECT c.id, chain.root FROM tasks c JOIN chain ON c.parent_task_id = chain.id
)
UPDATE tasks SET conversation_id = chain.root FROM chain
WHERE chain.id = tasks.id AND chain.root <> tasks.id AND tasks.conversation_id IS NULL;`

// backfill runs backfillConversations in tx.
func backfill(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, backfillConversations); err != nil {
		return fmt.Errorf("backfill conversations: %w", err)
	}
	return nil
}

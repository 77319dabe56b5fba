-- 0008: the push stream is trimmed every 100th row instead of after every
-- row. The trim ran a DELETE for each row inserted, deleting nothing or one
-- row; that cost a tenth of a lifecycle's SQLite time. It now deletes the
-- rows past the newest 20,000 (relay.DefaultMaxPushEvents) when a row's
-- sequence is a multiple of 100, so the stream holds 20,000 to 20,099 rows.
DROP TRIGGER push_trim;

CREATE TRIGGER push_trim AFTER INSERT ON push_events WHEN NEW.sequence % 100 = 0 BEGIN
    DELETE FROM push_events WHERE sequence <= NEW.sequence - 20000;
END;

/// The hub store's tables, triggers and role. Written once by `PostgresEventStore.create`; like the SQLite store's
/// migrations, never edited (a change is a new statement list, applied by version).
enum PostgresSchema {
    static let statements: [String] = [
        "CREATE TABLE editlog_meta (key text PRIMARY KEY, value text NOT NULL)",
        // The one row appenders lock: the last position and hash.
        "CREATE TABLE editlog_head (only_row boolean PRIMARY KEY CHECK (only_row), position bigint NOT NULL CHECK (position >= 0), hash bytea NOT NULL)",
        """
        CREATE TABLE events (
            position bigint PRIMARY KEY CHECK (position > 0),
            id uuid NOT NULL UNIQUE,
            stream text NOT NULL,
            stream_version bigint NOT NULL CHECK (stream_version > 0),
            type text NOT NULL,
            payload bytea NOT NULL,
            actor text NOT NULL,
            device text NOT NULL,
            session text,
            cause text NOT NULL,
            client_time text,
            recorded_time text NOT NULL,
            origin_log text NOT NULL,
            origin_position bigint NOT NULL,
            origin_hash bytea,
            hash bytea NOT NULL CHECK (length(hash) = 32),
            UNIQUE (stream, stream_version))
        """,
        "CREATE TABLE blobs (sha256 bytea NOT NULL CHECK (length(sha256) = 32), piece integer NOT NULL CHECK (piece >= 0), size bigint NOT NULL, bytes bytea NOT NULL, PRIMARY KEY (sha256, piece))",
        """
        CREATE FUNCTION editlog_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'EditLog: % on % refused: the log is append-only (a fix is a new event)', TG_OP, TG_TABLE_NAME;
        END $$
        """,
        """
        CREATE FUNCTION editlog_next_position() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.position <> (SELECT COALESCE(MAX(position), 0) + 1 FROM events) THEN
                RAISE EXCEPTION 'EditLog: event position % is not the next one: positions are gap-free', NEW.position;
            END IF;
            RETURN NEW;
        END $$
        """,
        """
        CREATE FUNCTION editlog_head_forward() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP <> 'UPDATE' OR NEW.position < OLD.position
               OR (NEW.position > 0 AND NOT EXISTS (SELECT 1 FROM events WHERE position = NEW.position AND hash = NEW.hash)) THEN
                RAISE EXCEPTION 'EditLog: the head only moves forward, to the last event';
            END IF;
            RETURN NEW;
        END $$
        """,
        "CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION editlog_refuse_change()",
        "CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION editlog_refuse_change()",
        "CREATE TRIGGER events_gap_free BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION editlog_next_position()",
        "CREATE TRIGGER blobs_append_only BEFORE UPDATE OR DELETE ON blobs FOR EACH ROW EXECUTE FUNCTION editlog_refuse_change()",
        "CREATE TRIGGER blobs_no_truncate BEFORE TRUNCATE ON blobs FOR EACH STATEMENT EXECUTE FUNCTION editlog_refuse_change()",
        "CREATE TRIGGER meta_append_only BEFORE UPDATE OR DELETE ON editlog_meta FOR EACH ROW EXECUTE FUNCTION editlog_refuse_change()",
        "CREATE TRIGGER meta_no_truncate BEFORE TRUNCATE ON editlog_meta FOR EACH STATEMENT EXECUTE FUNCTION editlog_refuse_change()",
        "CREATE TRIGGER head_forward BEFORE UPDATE OR DELETE ON editlog_head FOR EACH ROW EXECUTE FUNCTION editlog_head_forward()",
        "CREATE TRIGGER head_no_truncate BEFORE TRUNCATE ON editlog_head FOR EACH STATEMENT EXECUTE FUNCTION editlog_refuse_change()",
        // The nodes' role: read everything, insert events and blobs, move the head; no UPDATE or DELETE on the log.
        """
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'editlog_appender') THEN CREATE ROLE editlog_appender NOLOGIN; END IF;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;  -- roles are per cluster: another store's create made it
        END $$
        """,
        "GRANT SELECT ON editlog_meta TO editlog_appender",
        "GRANT SELECT, INSERT ON events, blobs TO editlog_appender",
        "GRANT SELECT, UPDATE ON editlog_head TO editlog_appender",
    ]
}

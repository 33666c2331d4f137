/// The hub store's tables, triggers and role. Written once by `PostgresEventStore.create`; like the SQLite store's
/// migrations, never edited (a change is a new statement list, applied by version).
public enum PostgresSchema {
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

extension PostgresSchema {
    /// Version 2: each stream's version in a table of its own (kept by a trigger once per INSERT statement, which also
    /// checks the gap-free rule version 1 checked per row; a stream's version is one row, not an aggregate over its
    /// events), and `editlog_append`: one statement, one round
    /// trip, that takes the head lock, checks the head or each stream's expected version, hashes each event where it
    /// gets its position (the encoding of `EventHash`, so the hashes equal SQLite's), inserts, moves the head and
    /// notifies. The lock is held only inside it and its commit.
    /// Expected versions: -1 any, -2 no stream, n exact. `absent` bits: 1 no session, 2 no client time, 4 no origin
    /// (a new event of this log). A refusal is SQLSTATE EL001 (the head moved; DETAIL: the head) or EL002 (a stream
    /// moved; DETAIL: the event's index and the stream's version): the caller words it, by the rules of `EditLogStore`.
    static let version2: [String] = [
        "CREATE TABLE editlog_streams (stream text PRIMARY KEY, version bigint NOT NULL CHECK (version > 0))",
        // Once per INSERT statement, over the rows it inserted (any writer's): they must continue the log without a gap
        // (version 1 checked it row by row, a query per row), and each stream's version moves to its last.
        """
        CREATE FUNCTION editlog_events_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE lo bigint; hi bigint; n bigint; before bigint;
        BEGIN
            SELECT MIN(position), MAX(position), COUNT(*) INTO lo, hi, n FROM inserted;
            IF n = 0 THEN RETURN NULL; END IF;
            SELECT COALESCE(MAX(position), 0) INTO before FROM events WHERE position < lo;
            IF lo <> before + 1 OR hi - lo + 1 <> n THEN
                RAISE EXCEPTION 'EditLog: event positions % to % do not follow position %: positions are gap-free', lo, hi, before;
            END IF;
            INSERT INTO editlog_streams AS s (stream, version) SELECT stream, MAX(stream_version) FROM inserted GROUP BY stream
            ON CONFLICT (stream) DO UPDATE SET version = EXCLUDED.version WHERE s.version < EXCLUDED.version;
            RETURN NULL;
        END $$
        """,
        "CREATE TRIGGER events_inserted AFTER INSERT ON events REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION editlog_events_inserted()",
        "DROP TRIGGER events_gap_free ON events",
        "INSERT INTO editlog_streams (stream, version) SELECT stream, MAX(stream_version) FROM events GROUP BY stream",
        // One field of the hash encoding: its length (4 bytes, big-endian), then its bytes.
        "CREATE FUNCTION editlog_field(b bytea) RETURNS bytea IMMUTABLE STRICT LANGUAGE sql AS $$ SELECT int4send(length(b)) || b $$",
        // Set-based where it can be: the ids and the streams' versions in one query each, the rows in one INSERT; only
        // the chain is a loop. Ids are distinct within a call (the caller sends a repeated id once).
        #"""
        CREATE FUNCTION editlog_append(log_id text, after_head bigint, ids uuid[], streams text[], expected bigint[], types text[],
                                       payloads bytea[], actors text[], devices text[], sessions text[], causes text[], client_times text[],
                                       recorded_times text[], origin_logs text[], origin_positions bigint[], origin_hashes bytea[], absent int[])
        RETURNS TABLE (out_position bigint, out_version bigint, out_hash bytea, out_stored boolean, out_waited_ms double precision)
        LANGUAGE plpgsql AS $$
        DECLARE
            head_position bigint; head_hash bytea; start_position bigint; waited double precision;
            n int := coalesce(array_length(ids, 1), 0);
            found bigint[]; base bigint[]; moved jsonb := '{}';
            keep int[] := '{}'; pos bigint[] := '{}'; ver bigint[] := '{}'; hashes bytea[] := '{}';
            o_logs text[] := '{}'; o_positions bigint[] := '{}'; o_hashes bytea[] := '{}';
            v bigint; p bigint; o_log text; o_position bigint; o_hash bytea; h bytea; j int := 0;
        BEGIN
            SELECT position, hash INTO head_position, head_hash FROM editlog_head FOR UPDATE;
            waited := extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000;
            IF after_head IS NOT NULL AND after_head <> head_position THEN
                RAISE EXCEPTION 'EditLog: the head moved' USING ERRCODE = 'EL001', DETAIL = head_position::text;
            END IF;
            start_position := head_position;
            found := ARRAY(SELECT e.position FROM unnest(ids) WITH ORDINALITY AS u(id, i) LEFT JOIN events e ON e.id = u.id ORDER BY u.i);
            base := ARRAY(SELECT coalesce(s.version, 0) FROM unnest(streams) WITH ORDINALITY AS u(stream, i)
                          LEFT JOIN editlog_streams s ON s.stream = u.stream ORDER BY u.i);
            FOR i IN 1 .. n LOOP
                CONTINUE WHEN found[i] IS NOT NULL;
                v := coalesce((moved ->> streams[i])::bigint, base[i]);
                IF (expected[i] = -2 AND v <> 0) OR (expected[i] >= 0 AND expected[i] <> v) THEN
                    RAISE EXCEPTION 'EditLog: stream % moved', streams[i] USING ERRCODE = 'EL002', DETAIL = (i - 1)::text || ' ' || v::text;
                END IF;
                p := head_position + 1;
                IF absent[i] & 4 <> 0 OR (origin_logs[i] = log_id AND origin_positions[i] = p) THEN
                    o_log := log_id; o_position := p; o_hash := NULL;
                ELSE
                    o_log := origin_logs[i]; o_position := origin_positions[i]; o_hash := origin_hashes[i];
                END IF;
                h := sha256(editlog_field(head_hash)
                    || int4send(8) || int8send(p)
                    || int4send(16) || uuid_send(ids[i])
                    || editlog_field(convert_to(streams[i], 'UTF8'))
                    || int4send(8) || int8send(v + 1)
                    || editlog_field(convert_to(types[i], 'UTF8'))
                    || editlog_field(payloads[i])
                    || editlog_field(convert_to(actors[i], 'UTF8'))
                    || editlog_field(convert_to(devices[i], 'UTF8'))
                    || CASE WHEN absent[i] & 1 <> 0 THEN '\x00'::bytea ELSE '\x01'::bytea || editlog_field(convert_to(sessions[i], 'UTF8')) END
                    || editlog_field(convert_to(causes[i], 'UTF8'))
                    || CASE WHEN absent[i] & 2 <> 0 THEN '\x00'::bytea ELSE '\x01'::bytea || editlog_field(convert_to(client_times[i], 'UTF8')) END
                    || editlog_field(convert_to(recorded_times[i], 'UTF8'))
                    || editlog_field(convert_to(o_log, 'UTF8'))
                    || int4send(8) || int8send(o_position)
                    || CASE WHEN o_hash IS NULL THEN '\x00'::bytea ELSE '\x01'::bytea || editlog_field(o_hash) END);
                keep := keep || i; pos := pos || p; ver := ver || (v + 1); hashes := hashes || h;
                o_logs := o_logs || o_log; o_positions := o_positions || o_position; o_hashes := o_hashes || o_hash;
                moved := moved || jsonb_build_object(streams[i], v + 1);
                head_position := p; head_hash := h;
            END LOOP;
            IF head_position > start_position THEN
                INSERT INTO events (position, id, stream, stream_version, type, payload, actor, device, session, cause, client_time,
                                    recorded_time, origin_log, origin_position, origin_hash, hash)
                SELECT pos[k], ids[i], streams[i], ver[k], types[i], payloads[i], actors[i], devices[i],
                       CASE WHEN absent[i] & 1 <> 0 THEN NULL ELSE sessions[i] END, causes[i],
                       CASE WHEN absent[i] & 2 <> 0 THEN NULL ELSE client_times[i] END, recorded_times[i], o_logs[k], o_positions[k], o_hashes[k], hashes[k]
                FROM generate_subscripts(keep, 1) AS k, LATERAL (SELECT keep[k] AS i) AS x
                ORDER BY k;
                UPDATE editlog_head SET position = head_position, hash = head_hash;
                PERFORM pg_notify('editlog_events', head_position::text);
            END IF;
            FOR i IN 1 .. n LOOP
                IF found[i] IS NOT NULL THEN
                    out_position := found[i]; out_version := NULL; out_hash := NULL; out_stored := true;
                ELSE
                    j := j + 1;
                    out_position := pos[j]; out_version := ver[j]; out_hash := hashes[j]; out_stored := false;
                END IF;
                out_waited_ms := waited;
                RETURN NEXT;
            END LOOP;
        END $$
        """#,
        "GRANT SELECT ON editlog_streams TO editlog_appender",
        "GRANT INSERT, UPDATE ON editlog_streams TO editlog_appender",
    ]

    /// Every version's statements, in order: a store at version n runs `versions[n...]` to reach the last.
    public static let versions: [[String]] = [statements, version2]
    /// The meta key that records version `n` (≥ 2) applied; a store without one is at version 1.
    static func metaKey(_ n: Int) -> String { "schema \(n)" }
    /// The version a store's `editlog_meta` rows record.
    static func version(_ meta: [String: String]) -> Int {
        meta.keys.compactMap { $0.hasPrefix("schema ") ? Int($0.dropFirst(7)) : nil }.max() ?? 1
    }
}

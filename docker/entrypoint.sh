#!/bin/sh
# Entry point of the Streamcat image. CI runs this same script outside Docker.
#   entrypoint.sh serve     wait for the database, (optionally) migrate, serve with gunicorn
#   entrypoint.sh migrate   wait for the database, apply migrations, exit (compose's one-shot service)
#   entrypoint.sh CMD...    run any other command (streamcat backup, a shell...)
set -eu

STREAMCAT=${STREAMCAT_BIN:-streamcat}

wait_for_database() {
    deadline=$(( $(date +%s) + ${STREAMCAT_DB_WAIT_SECONDS:-60} ))
    until "$STREAMCAT" db current >/dev/null 2>&1; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "entrypoint: database not reachable after ${STREAMCAT_DB_WAIT_SECONDS:-60}s" >&2
            "$STREAMCAT" db current  # print the real error
            exit 1
        fi
        sleep 1
    done
}

case "${1:-serve}" in
    serve)
        shift 2>/dev/null || true
        wait_for_database
        if [ "${STREAMCAT_MIGRATE_ON_START:-false}" = "true" ]; then
            "$STREAMCAT" db upgrade
        fi
        exec "$STREAMCAT" serve --host "${STREAMCAT_HOST:-0.0.0.0}" "$@"
        ;;
    migrate)
        wait_for_database
        exec "$STREAMCAT" db upgrade
        ;;
    *)
        exec "$@"
        ;;
esac

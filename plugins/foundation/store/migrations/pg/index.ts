// The PostgreSQL migrations: every `NNN-name.ts` file in this folder, in version order. A new
// migration is a new file here (and its SQLite twin in ../sqlite); never edit a released one.
import { migrationsIn, type Migration } from '../../migrate.js'

export const pgMigrations: readonly Migration[] = await migrationsIn(new URL('./', import.meta.url))

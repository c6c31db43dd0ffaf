-- A session keeps the mode and the config option values the user chose
-- (PUT /session/{id}/mode, PUT /session/{id}/config/{optionId}), so that a
-- restart or a restore (session/load, session/resume, or a fresh
-- session/new) gives the agent the same choice again. mode_choice is a
-- mode id or ''; config_choices is a JSON object of option id -> value
-- (a string value id or a boolean).

-- +goose Up
ALTER TABLE sessions ADD COLUMN mode_choice TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN config_choices TEXT NOT NULL DEFAULT '{}'
    CHECK (json_valid(config_choices) AND json_type(config_choices) = 'object');

-- +goose Down
ALTER TABLE sessions DROP COLUMN config_choices;
ALTER TABLE sessions DROP COLUMN mode_choice;

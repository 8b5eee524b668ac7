/**
 * @file The judge's answer: ART's `Response` model ({scores: [{trajectory_id, explanation,
 * score}]}, field descriptions as ART's pydantic fields give them) as a JSON Schema, and
 * the OpenAI `response_format` that asks for it strictly (OpenAI's structured outputs:
 * every property required, no additional properties), as LiteLLM turns ART's pydantic
 * `response_format=Response` into a json_schema request.
 */
import type { ResponseFormatJSONSchema } from 'openai/resources/shared';

/** One trajectory's verdict. */
export interface TrajectoryScore {
	trajectory_id: string;
	explanation: string;
	score: number;
}

export const RESPONSE_SCHEMA = {
	type: 'object',
	properties: {
		scores: {
			type: 'array',
			description: 'The scores for each trajectory.',
			items: {
				type: 'object',
				properties: {
					trajectory_id: { type: 'string', description: 'The id of the trajectory being scored.' },
					explanation: {
						type: 'string',
						description: "A short description of the trajectory's performance."
					},
					score: { type: 'number', description: 'A score between 0 and 1.' }
				},
				required: ['trajectory_id', 'explanation', 'score'],
				additionalProperties: false
			}
		}
	},
	required: ['scores'],
	additionalProperties: false
} as const;

/** `response_format` for chat.completions.create: the schema above, strict. */
export const RESPONSE_FORMAT: ResponseFormatJSONSchema = {
	type: 'json_schema',
	json_schema: {
		name: 'ruler_scores',
		description: 'One score between 0 and 1, with an explanation, for each trajectory.',
		schema: RESPONSE_SCHEMA as unknown as Record<string, unknown>,
		strict: true
	}
};

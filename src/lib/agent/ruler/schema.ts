/**
 * @file The judge's answer: ART's `Response` ({scores: [{trajectory_id, explanation,
 * score}]}) as a JSON Schema and the strict `response_format` asking for it.
 * `exactResponseFormat(ids)` narrows it to one request (a tuple, one const id per position,
 * score in [0, 1]): TabRL's engine enforces it, so a local judge cannot answer what reply.ts
 * refuses; remote judges keep ART's (OpenAI's strict mode may refuse `prefixItems`).
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

/** RESPONSE_FORMAT narrowed to the trajectories `ids` of one request (see the file's comment). */
export function exactResponseFormat(ids: readonly string[]): ResponseFormatJSONSchema {
	const { scores } = RESPONSE_SCHEMA.properties;
	const position = (id: string) => ({
		...scores.items,
		properties: {
			...scores.items.properties,
			trajectory_id: { ...scores.items.properties.trajectory_id, const: id },
			score: { ...scores.items.properties.score, minimum: 0, maximum: 1 }
		}
	});
	const array = { type: scores.type, description: scores.description };
	return {
		type: 'json_schema',
		json_schema: {
			...RESPONSE_FORMAT.json_schema,
			schema: {
				...RESPONSE_SCHEMA,
				properties: {
					scores: { ...array, prefixItems: ids.map(position), items: false, minItems: ids.length }
				}
			}
		}
	};
}

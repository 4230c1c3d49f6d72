// Big Sky Agents' own evaluators, for the differential tests (tests/test_bigsky_reference.py).
//
// Runs under node with the published package's dist/evaluators/ extracted by `make reference`
// (pinned in the Makefile). Reads one JSON request a line on stdin and writes one JSON answer a
// line on stdout, so a test session starts it once:
//   {"function": "matchToolCall", "arguments": {...}, "example": {...}, "run": {...}}
//   (any evaluator of chat.js that needs no network; ``arguments`` as in the dataset, if any)
//   -> {"score": true | false}  or  {"error": "..."}
// ``example`` and ``run`` are what Big Sky's LangSmith runner hands an evaluator: the dataset
// example, and ``{outputs: {message}}`` with the agent's message (tool call arguments as JSON text).
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const evaluators = process.argv[ 2 ];
const chat = await import( pathToFileURL( `${ evaluators }/chat.js` ).href );

const lines = createInterface( { input: process.stdin } );
for await ( const line of lines ) {
	let answer;
	try {
		const request = JSON.parse( line );
		const evaluator = chat[ request.function ];
		if ( typeof evaluator !== 'function' ) {
			throw new Error( `no evaluator ${ request.function } in chat.js` );
		}
		const result = await evaluator( 'key', request.arguments ?? {} )( request.run, request.example );
		answer = { score: result.score };
	} catch ( error ) {
		answer = { error: String( error ) };
	}
	process.stdout.write( JSON.stringify( answer ) + '\n' );
}

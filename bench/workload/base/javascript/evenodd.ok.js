const input = require('fs').readFileSync(0, 'utf8').trim();
const n = Number(input);
// Mahmoud wins by taking all of an even n
console.log(n % 2 === 0 ? 'Mahmoud' : 'Ehab');

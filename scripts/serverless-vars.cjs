// Variables serverless.yml cannot express by itself. `queueConfig` turns `custom.queue` (topics
// and limits, declared once) into the JSON string the Lambdas read from DQ_CONFIG.
module.exports.queueConfig = async ({ resolveVariable }) => JSON.stringify(await resolveVariable('self:custom.queue'));
